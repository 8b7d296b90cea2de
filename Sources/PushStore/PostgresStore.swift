import Foundation
import Logging
import NIOCore
import PostgresNIO
import PushModel
import PushPolicy

/// The store on PostgreSQL (postgres-nio), for several gateway nodes on one database. A commit is one
/// transaction of a few statements whatever its size: every kind of change goes in as arrays
/// (`UNNEST`), so a batch of thousands costs a handful of round trips.
public final class PostgresStore: ClusterStore {
    public let kind = "postgres"
    public let nodeID: String
    /// The URL without its password, for messages.
    public let place: String
    private let client: PostgresClient
    private let logger = Logger(label: "pushgate.store.postgres")

    /// `postgres://user:password@host:port/database` (`postgresql://` too; port 5432 by default);
    /// `nodeID` names this node among those sharing the database (see `ClusterStore`).
    public init(url: String, nodeID: String = "pushgate") throws {
        self.nodeID = nodeID
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme),
            let host = components.host, !host.isEmpty, let user = components.user, !user.isEmpty
        else {
            throw StoreError(
                "store.postgres.url: expected postgres://user:password@host:port/database, got '\(Self.redacted(url))'")
        }
        let database = String(components.path.drop { $0 == "/" })
        let port = components.port ?? 5432
        place = "postgres://\(user)@\(host):\(port)/\(database)"
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: user, password: components.password,
            database: database.isEmpty ? nil : database, tls: .disable)
        // One writer commits at a time; with the listening connection, pruning and lookups a node needs a
        // few, and several nodes share the server's `max_connections` (100 by default).
        configuration.options.maximumConnections = 8
        client = PostgresClient(configuration: configuration)
    }

    /// The connection pool: every query waits for it, so a caller runs this in the task group that uses
    /// the store (`withRunning`, `GatewayServices.withServices`); cancelling it closes the connections.
    public func run() async {
        await client.run()
    }

    public static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? "?"
    }

    // MARK: Schema

    static let migrations: [[String]] = [
        [
            "CREATE TABLE devices (id TEXT PRIMARY KEY, secret_hash BYTEA NOT NULL, created_at BIGINT NOT NULL, seq BIGSERIAL)",
            """
            CREATE TABLE tokens (token TEXT PRIMARY KEY, device_id TEXT NOT NULL, bundle_id TEXT NOT NULL,
                unregistered_at BIGINT, seq BIGSERIAL)
            """,
            """
            CREATE TABLE notifications (
                seq BIGSERIAL PRIMARY KEY, team_id TEXT NOT NULL, apns_id TEXT NOT NULL,
                device_token TEXT NOT NULL, topic TEXT NOT NULL, bundle_id TEXT NOT NULL, push_type TEXT NOT NULL,
                priority BIGINT NOT NULL, expiration BIGINT, collapse_id TEXT, class TEXT NOT NULL,
                payload BYTEA NOT NULL, received_at BIGINT NOT NULL, expires_at BIGINT, device_id TEXT,
                state BIGINT NOT NULL, rule TEXT, finished_at BIGINT)
            """,
            "CREATE UNIQUE INDEX notifications_id ON notifications (apns_id, team_id)",
            "CREATE INDEX notifications_pending ON notifications (seq) WHERE state = 0",
            "CREATE INDEX notifications_finished ON notifications (finished_at) WHERE state <> 0",
            """
            CREATE TABLE app_budgets (
                device_id TEXT NOT NULL, bundle_id TEXT NOT NULL, tokens DOUBLE PRECISION,
                strikes DOUBLE PRECISION NOT NULL, settled_at BIGINT NOT NULL, cooling_until BIGINT NOT NULL,
                app_state TEXT NOT NULL, PRIMARY KEY (device_id, bundle_id))
            """,
        ],
        [
            "ALTER TABLE devices ADD COLUMN owner TEXT",
            "ALTER TABLE devices ADD COLUMN claims BIGINT NOT NULL DEFAULT 0",
            "CREATE INDEX notifications_device_pending ON notifications (device_id, seq) WHERE state = 0",
        ],
        [
            // Each node's lease, renewed on a timer with the database's clock: a node whose lease is stale
            // is gone, and a survivor takes its devices over.
            "CREATE TABLE nodes (node_id TEXT PRIMARY KEY, renewed_at BIGINT NOT NULL)"
        ],
        [
            // When each device last connected (pruning) and when it was removed.
            "ALTER TABLE devices ADD COLUMN last_seen_at BIGINT",
            "ALTER TABLE devices ADD COLUMN removed_at BIGINT",
        ],
    ]

    /// The database's clock in milliseconds: leases are compared on one clock, whatever the nodes' say.
    static let databaseNow = "(extract(epoch from clock_timestamp()) * 1000)::bigint"

    /// The channel every node listens on.
    static let channel = "pushgate"
    /// Devices whose state other nodes load at start (this node loads the rest: its own, and those no
    /// node has claimed).
    private var ownedElsewhere: String { "(SELECT id FROM devices WHERE owner <> $1)" }

    private func migrate() async throws {
        try await client.withTransaction(logger: logger) { connection in
            // Nodes starting together migrate one at a time.
            try await connection.query("SELECT pg_advisory_xact_lock(7418)", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)", logger: logger)
            var current = 0
            for try await version in try await connection.query(
                "SELECT COALESCE(MAX(version), 0) FROM schema_version", logger: logger
            ).decode(Int64.self) {
                current = Int(version)
            }
            guard current <= Schema.latestVersion else {
                throw StoreError.newerSchema(current, where: "at \(place)")
            }
            for version in (current + 1)..<(Schema.latestVersion + 1) {
                for statement in Self.migrations[version - 1] {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                let number = Int64(version)
                try await connection.query("INSERT INTO schema_version (version) VALUES (\(number))", logger: logger)
            }
        }
    }

    // MARK: StoreBackend

    public func open(now: UnixTime) async throws -> StoreSnapshot {
        do {
            try await migrate()
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError("cannot use the PostgreSQL database at \(place): \(String(reflecting: error))")
        }
        // Alive from the start: no other node takes this one's devices while it opens.
        try await renewLease()
        _ = try await expire(now: now, atStart: true)
        var snapshot = StoreSnapshot()
        for try await (id, hash, created, owner, seen, removed) in try await client.query(
            "SELECT id, secret_hash, created_at, owner, last_seen_at, removed_at FROM devices ORDER BY seq",
            logger: logger
        ).decode((String, ByteBuffer, Int64, String?, Int64?, Int64?).self) {
            snapshot.devices.append(
                StoredDevice(
                    id: id, secretHash: Array(buffer: hash), createdAt: UnixTime(milliseconds: created), owner: owner,
                    lastSeenAt: seen.map { UnixTime(milliseconds: $0) },
                    removedAt: removed.map { UnixTime(milliseconds: $0) }))
        }
        for try await (token, device, bundle, unregistered) in try await client.query(
            "SELECT token, device_id, bundle_id, unregistered_at FROM tokens ORDER BY seq", logger: logger
        ).decode((String, String, String, Int64?).self) {
            snapshot.tokens.append(
                StoredToken(
                    token: token, deviceID: device, bundleID: bundle,
                    unregisteredAt: unregistered.map { UnixTime(milliseconds: $0) }))
        }
        snapshot.budgets = try await client.withConnection { connection in
            try await Self.budgets(
                connection, where: "device_id NOT IN \(self.ownedElsewhere)", nodeID, logger: self.logger)
        }
        var pending = PostgresQuery(
            unsafeSQL: Self.selectNotification
                + " WHERE state = 0 AND COALESCE(device_id, '') NOT IN \(ownedElsewhere) ORDER BY seq")
        pending.binds.append(nodeID)
        for try await row in try await client.query(pending, logger: logger) {
            snapshot.pending.append(try Self.notification(row))
        }
        return snapshot
    }

    /// Budgets of the devices `condition` picks (`$1` bound to `value`), by device then bundle id.
    static func budgets<Value: PostgresNonThrowingEncodable & Sendable>(
        _ connection: PostgresConnection, where condition: String, _ value: Value, logger: Logger
    ) async throws -> [DeviceBudgets] {
        var query = PostgresQuery(
            unsafeSQL: """
                SELECT device_id, bundle_id, tokens, strikes, settled_at, cooling_until, app_state FROM app_budgets
                WHERE \(condition) ORDER BY device_id, bundle_id
                """)
        query.binds.append(value)
        var budgets: [DeviceBudgets] = []
        for try await (device, bundle, tokens, strikes, settled, cooling, state) in try await connection.query(
            query, logger: logger
        ).decode((String, String, Double?, Double, Int64, Int64, String).self) {
            guard let appState = AppState(rawValue: state) else {
                throw StoreError(
                    "app_budgets: device \(device) has app_state '\(state)', which this pushgate cannot read")
            }
            let app = AppBudget(
                bundleID: bundle,
                budget: ThrottleBudget(
                    tokens: tokens.map { Float($0) }, strikes: Float(strikes), settledAt: settled,
                    coolingUntil: cooling, appState: appState))
            if budgets.last?.deviceID == device {
                budgets[budgets.count - 1].apps.append(app)
            } else {
                budgets.append(DeviceBudgets(deviceID: device, apps: [app]))
            }
        }
        return budgets
    }

    public func commit(_ batch: StoreBatch) async throws {
        guard !batch.isEmpty else { return }
        let logger = self.logger
        try await client.withTransaction(logger: logger) { connection in
            if !batch.devices.isEmpty {
                let ids = batch.devices.map(\.id)
                let hashes = batch.devices.map { ByteBuffer(bytes: $0.secretHash) }
                let created = batch.devices.map(\.createdAt.milliseconds)
                let owners = batch.devices.map { $0.owner ?? "" }
                try await connection.query(
                    """
                    INSERT INTO devices (id, secret_hash, created_at, owner)
                    SELECT i, h, c, NULLIF(o, '')
                    FROM UNNEST(\(ids)::text[], \(hashes)::bytea[], \(created)::bigint[], \(owners)::text[])
                        AS x(i, h, c, o)
                    ON CONFLICT (id) DO NOTHING
                    """, logger: logger)
            }
            for (column, marks) in [("last_seen_at", batch.seen), ("removed_at", batch.removed)] where !marks.isEmpty {
                let ids = Array(marks.keys)
                let times = ids.map { marks[$0]!.milliseconds }
                var update = PostgresQuery(
                    unsafeSQL: """
                        UPDATE devices d SET \(column) = x.t FROM UNNEST($1::text[], $2::bigint[]) AS x(i, t)
                        WHERE d.id = x.i
                        """)
                update.binds.append(ids)
                update.binds.append(times)
                try await connection.query(update, logger: logger)
            }
            if !batch.tokens.isEmpty {
                // The last change to a token in the batch wins, as if applied one by one.
                var last: [String: StoredToken] = [:]
                var order: [String] = []
                for token in batch.tokens {
                    if last.updateValue(token, forKey: token.token) == nil { order.append(token.token) }
                }
                let tokens = order.map { last[$0]! }
                let values = tokens.map(\.token)
                let devices = tokens.map(\.deviceID)
                let bundles = tokens.map(\.bundleID)
                let unregistered = tokens.map { $0.unregisteredAt?.milliseconds ?? -1 }
                try await connection.query(
                    """
                    INSERT INTO tokens (token, device_id, bundle_id, unregistered_at)
                    SELECT t, d, b, NULLIF(u, -1)
                    FROM UNNEST(\(values)::text[], \(devices)::text[], \(bundles)::text[], \(unregistered)::bigint[])
                        AS x(t, d, b, u)
                    ON CONFLICT (token) DO UPDATE SET unregistered_at = excluded.unregistered_at
                    """, logger: logger)
            }
            if !batch.notifications.isEmpty {
                let columns = batch.notifications.map(NotificationColumns.init)
                let finished = zip(batch.notifications, columns).map { $0.state == .pending ? -1 : $1.receivedAt }
                try await connection.query(
                    """
                    INSERT INTO notifications (team_id, apns_id, device_token, topic, bundle_id, push_type, priority,
                        expiration, collapse_id, class, payload, received_at, expires_at, device_id, state, rule,
                        finished_at)
                    SELECT a, b, c, d, e, f, g, NULLIF(h, -1), NULLIF(i, ''), j, k, l, NULLIF(m, -1), NULLIF(n, ''),
                        o, NULLIF(p, ''), NULLIF(q, -1)
                    FROM UNNEST(\(columns.map(\.teamID))::text[], \(columns.map(\.apnsID))::text[],
                        \(columns.map(\.deviceToken))::text[], \(columns.map(\.topic))::text[],
                        \(columns.map(\.bundleID))::text[], \(columns.map(\.pushType))::text[],
                        \(columns.map(\.priority))::bigint[], \(columns.map { $0.expiration ?? -1 })::bigint[],
                        \(columns.map { $0.collapseID ?? "" })::text[], \(columns.map(\.notificationClass))::text[],
                        \(columns.map { ByteBuffer(bytes: $0.payload) })::bytea[], \(columns.map(\.receivedAt))::bigint[],
                        \(columns.map { $0.expiresAt ?? -1 })::bigint[], \(columns.map { $0.deviceID ?? "" })::text[],
                        \(columns.map(\.state))::bigint[], \(columns.map { $0.rule ?? "" })::text[],
                        \(finished)::bigint[])
                        AS x(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q)
                    ON CONFLICT (apns_id, team_id) DO NOTHING
                    """, logger: logger)
            }
            if !batch.outcomes.isEmpty {
                // One row per id, as if applied one by one: the last state, the last rule given.
                var merged: [APNsID: NotificationOutcome] = [:]
                var order: [APNsID] = []
                for outcome in batch.outcomes {
                    if var previous = merged[outcome.apnsID] {
                        previous.state = outcome.state
                        previous.at = outcome.at
                        if let rule = outcome.rule { previous.rule = rule }
                        merged[outcome.apnsID] = previous
                    } else {
                        merged[outcome.apnsID] = outcome
                        order.append(outcome.apnsID)
                    }
                }
                let outcomes = order.map { merged[$0]! }
                let ids = outcomes.map(\.apnsID.value)
                let states = outcomes.map { Int64($0.state.rawValue) }
                let rules = outcomes.map { $0.rule?.rawValue ?? "" }
                let finished = outcomes.map { $0.state == .pending ? -1 : $0.at.milliseconds }
                try await connection.query(
                    """
                    UPDATE notifications n SET state = o.s, rule = COALESCE(NULLIF(o.r, ''), n.rule),
                        finished_at = NULLIF(o.f, -1)
                    FROM UNNEST(\(ids)::text[], \(states)::bigint[], \(rules)::text[], \(finished)::bigint[])
                        AS o(i, s, r, f)
                    WHERE n.apns_id = o.i
                    """, logger: logger)
            }
            if !batch.budgets.isEmpty {
                // Only the owner's: a node that just lost a device must not overwrite what its new owner writes.
                let devices = Array(batch.budgets.keys)
                let node = self.nodeID
                let owned = try await connection.query(
                    """
                    SELECT id FROM devices WHERE id = ANY(\(devices)::text[]) AND (owner = \(node) OR owner IS NULL)
                    """, logger: logger
                ).decode(String.self).all()
                let rows = owned.flatMap { device in (batch.budgets[device] ?? []).map { (device, $0) } }
                try await connection.query(
                    "DELETE FROM app_budgets WHERE device_id = ANY(\(owned)::text[])", logger: logger)
                if !rows.isEmpty {
                    try await connection.query(
                        """
                        INSERT INTO app_budgets (device_id, bundle_id, tokens, strikes, settled_at, cooling_until,
                            app_state)
                        SELECT d, b, NULLIF(t, 'NaN'), s, se, c, a
                        FROM UNNEST(\(rows.map(\.0))::text[], \(rows.map(\.1.bundleID))::text[],
                            \(rows.map { Double($0.1.budget.tokens ?? .nan) })::float8[],
                            \(rows.map { Double($0.1.budget.strikes) })::float8[],
                            \(rows.map(\.1.budget.settledAt))::bigint[], \(rows.map(\.1.budget.coolingUntil))::bigint[],
                            \(rows.map(\.1.budget.appState.rawValue))::text[]) AS x(d, b, t, s, se, c, a)
                        """, logger: logger)
                }
            }
            if !batch.notices.isEmpty {
                let texts = batch.notices.map { ClusterMessage(from: self.nodeID, notice: $0).text }
                // Delivered by PostgreSQL when, and only if, this transaction commits.
                _ = try await connection.query(
                    "SELECT COUNT(pg_notify(\(Self.channel), n)) FROM UNNEST(\(texts)::text[]) AS n", logger: logger
                ).decode(Int64.self).all()
            }
        }
    }

    // MARK: ClusterStore

    public func claim(deviceID: String) async throws -> ClaimedDevice {
        let node = nodeID
        return try await client.withTransaction(logger: logger) { connection in
            let claimed = try await connection.query(
                """
                UPDATE devices d SET owner = \(node), claims = d.claims + 1
                FROM (SELECT id, owner FROM devices WHERE id = \(deviceID) FOR UPDATE) old
                WHERE d.id = old.id RETURNING old.owner, d.claims
                """, logger: self.logger
            ).decode((String?, Int64).self).all()
            guard let (before, claims) = claimed.first else {
                throw StoreError("device \(deviceID) is not in the store")
            }
            let notice = ClusterMessage(from: node, notice: .owner(deviceID: deviceID, node: node, claim: claims))
            _ = try await connection.query(
                "SELECT pg_notify(\(Self.channel), \(notice.text))", logger: self.logger
            ).all()
            let budgets = try await Self.budgets(connection, where: "device_id = $1", deviceID, logger: self.logger)
            var query = PostgresQuery(
                unsafeSQL: Self.selectNotification + " WHERE state = 0 AND device_id = $1 ORDER BY seq")
            query.binds.append(deviceID)
            var pending: [StoredNotification] = []
            for try await row in try await connection.query(query, logger: self.logger) {
                pending.append(try Self.notification(row))
            }
            return ClaimedDevice(
                previousOwner: before == node ? nil : before, claim: claims, budgets: budgets.first?.apps ?? [],
                pending: pending)
        }
    }

    public func renewLease() async throws {
        var query = PostgresQuery(
            unsafeSQL: """
                INSERT INTO nodes (node_id, renewed_at) VALUES ($1, \(Self.databaseNow))
                ON CONFLICT (node_id) DO UPDATE SET renewed_at = excluded.renewed_at
                """)
        query.binds.append(nodeID)
        _ = try await client.query(query, logger: logger).all()
    }

    public func takeOver(leaseMilliseconds: Int64) async throws -> [TakenDevice] {
        let node = nodeID
        return try await client.withTransaction(logger: logger) { connection in
            // The stale leases are deleted by the statement that moves their devices: the survivor that
            // deletes one holds its row, so one survivor takes each dead node's devices. Devices of a node
            // that holds no lease at all (gone before it wrote one) are taken too.
            var move = PostgresQuery(
                unsafeSQL: """
                    WITH dead AS (
                        DELETE FROM nodes WHERE node_id <> $1 AND renewed_at < \(Self.databaseNow) - $2
                        RETURNING node_id)
                    UPDATE devices d SET owner = $1, claims = d.claims + 1
                    WHERE d.owner IN (SELECT node_id FROM dead)
                        OR (d.owner IS NOT NULL AND d.owner <> $1 AND d.owner NOT IN (SELECT node_id FROM nodes))
                    RETURNING d.id, d.claims
                    """)
            move.binds.append(node)
            move.binds.append(leaseMilliseconds)
            var taken: [(id: String, claims: Int64)] = []
            for try await (id, claims) in try await connection.query(move, logger: self.logger).decode(
                (String, Int64).self)
            {
                taken.append((id, claims))
            }
            guard !taken.isEmpty else { return [] }
            let ids = taken.map(\.id)
            var notify = PostgresQuery(unsafeSQL: "SELECT pg_notify($1, t) FROM UNNEST($2::text[]) AS t")
            notify.binds.append(Self.channel)
            notify.binds.append(
                taken.map { ClusterMessage(from: node, notice: .owner(deviceID: $0.id, node: node, claim: $0.claims)).text })
            _ = try await connection.query(notify, logger: self.logger).all()
            var budgets: [String: [AppBudget]] = [:]
            for device in try await Self.budgets(connection, where: "device_id = ANY($1)", ids, logger: self.logger) {
                budgets[device.deviceID] = device.apps
            }
            var query = PostgresQuery(
                unsafeSQL: Self.selectNotification + " WHERE state = 0 AND device_id = ANY($1) ORDER BY seq")
            query.binds.append(ids)
            var pending: [String: [StoredNotification]] = [:]
            for try await row in try await connection.query(query, logger: self.logger) {
                let stored = try Self.notification(row)
                if let device = stored.deviceID { pending[device, default: []].append(stored) }
            }
            return taken.map { device in
                TakenDevice(
                    deviceID: device.id,
                    claimed: ClaimedDevice(
                        previousOwner: nil, claim: device.claims, budgets: budgets[device.id] ?? [],
                        pending: pending[device.id] ?? []))
            }
        }
    }

    public func undecided(olderThan cutoff: UnixTime) async throws -> [NotificationKey] {
        try await undecidedKeys(receivedBefore: cutoff.milliseconds)
    }

    /// Notifications for this node's devices that no policy has decided (pending, no rule), oldest first.
    private func undecidedKeys(receivedBefore: Int64) async throws -> [NotificationKey] {
        let node = nodeID
        var keys: [NotificationKey] = []
        for try await (apnsID, teamID) in try await client.query(
            """
            SELECT n.apns_id, n.team_id FROM notifications n JOIN devices d ON d.id = n.device_id
            WHERE n.state = 0 AND n.rule IS NULL AND d.owner = \(node) AND n.received_at < \(receivedBefore)
            ORDER BY n.seq
            """, logger: logger
        ).decode((String, String).self) {
            keys.append(NotificationKey(apnsID: apnsID, teamID: teamID))
        }
        return keys
    }

    public func notifications(_ keys: [NotificationKey]) async throws -> [StoredNotification] {
        guard !keys.isEmpty else { return [] }
        var query = PostgresQuery(
            unsafeSQL: Self.selectNotification.replacingOccurrences(
                of: "FROM notifications",
                with: """
                    FROM notifications JOIN UNNEST($1::text[], $2::text[]) WITH ORDINALITY AS k(a, t, o)
                        ON apns_id = k.a AND team_id = k.t
                    """) + " ORDER BY k.o")
        query.binds.append(keys.map(\.apnsID))
        query.binds.append(keys.map(\.teamID))
        var found: [StoredNotification] = []
        for try await row in try await client.query(query, logger: logger) { found.append(try Self.notification(row)) }
        return found
    }

    public func missedNotices() async throws -> [ClusterNotice] {
        let node = nodeID
        var notices: [ClusterNotice] = []
        var owners: [ClusterNotice] = []
        for try await (id, hash, created, owner, claims) in try await client.query(
            """
            SELECT id, secret_hash, created_at, owner, claims FROM devices WHERE owner IS DISTINCT FROM \(node)
            ORDER BY seq
            """, logger: logger
        ).decode((String, ByteBuffer, Int64, String?, Int64).self) {
            notices.append(
                .device(
                    StoredDevice(
                        id: id, secretHash: Array(buffer: hash), createdAt: UnixTime(milliseconds: created),
                        owner: owner)))
            if let owner { owners.append(.owner(deviceID: id, node: owner, claim: claims)) }
        }
        // Tokens of this node's own devices change only here: the registry has them, newer than the table
        // while a change waits for its commit.
        for try await (token, device, bundle, unregistered) in try await client.query(
            """
            SELECT t.token, t.device_id, t.bundle_id, t.unregistered_at FROM tokens t
            JOIN devices d ON d.id = t.device_id WHERE d.owner IS DISTINCT FROM \(node) ORDER BY t.seq
            """, logger: logger
        ).decode((String, String, String, Int64?).self) {
            notices.append(
                .token(
                    StoredToken(
                        token: token, deviceID: device, bundleID: bundle,
                        unregisteredAt: unregistered.map { UnixTime(milliseconds: $0) })))
        }
        notices += owners
        for key in try await undecidedKeys(receivedBefore: .max) {
            notices.append(.route(node: node, apnsID: key.apnsID, teamID: key.teamID))
        }
        return notices
    }

    public func listen(ready: @Sendable () -> Void, _ receive: @Sendable (ClusterMessage) -> Void) async throws {
        let node = nodeID
        try await client.withConnection { connection in
            try await connection.listen(on: Self.channel) { notifications in
                ready()
                for try await notification in notifications {
                    guard let message = ClusterMessage(text: notification.payload) else {
                        self.logger.warning(
                            "skipped a notice this pushgate cannot read",
                            metadata: ["notice": "\(notification.payload)"])
                        continue
                    }
                    if message.from != node { receive(message) }
                }
            }
        }
    }

    public func prune(finishedBefore: UnixTime, now: UnixTime) async throws -> PruneResult {
        let expired = try await expire(now: now, atStart: false)
        let before = finishedBefore.milliseconds
        let removed = try await count(
            "WITH gone AS (DELETE FROM notifications WHERE state <> 0 AND finished_at < \(before) RETURNING 1) SELECT COUNT(*) FROM gone"
        )
        return PruneResult(removed: removed, expired: expired)
    }

    public func notification(_ id: APNsID) async throws -> StoredNotification? {
        var query = PostgresQuery(unsafeSQL: Self.selectNotification + " WHERE apns_id = $1 ORDER BY seq DESC LIMIT 1")
        query.binds.append(id.value)
        for try await row in try await client.query(query, logger: logger) { return try Self.notification(row) }
        return nil
    }

    public func counts() async throws -> [NotificationState: Int] {
        var counts: [NotificationState: Int] = [:]
        for try await (state, count) in try await client.query(
            "SELECT state, COUNT(*) FROM notifications GROUP BY state", logger: logger
        ).decode((Int64, Int64).self) {
            if let state = NotificationState(rawValue: Int(state)) { counts[state] = Int(count) }
        }
        return counts
    }

    public func ping() async throws {
        try await client.query("SELECT 1", logger: logger)
    }

    /// Nothing to do here: the connections close when `run`'s task is cancelled.
    public func close() async throws {}

    // MARK: Rows

    static let selectNotification = SQLiteStore.selectNotification

    static func notification(_ row: PostgresRow) throws -> StoredNotification {
        let r = row.makeRandomAccess()
        return try NotificationColumns(
            teamID: r[0].decode(String.self), apnsID: r[1].decode(String.self), deviceToken: r[2].decode(String.self),
            topic: r[3].decode(String.self), bundleID: r[4].decode(String.self), pushType: r[5].decode(String.self),
            priority: r[6].decode(Int64.self), expiration: r[7].decode(Int64?.self),
            collapseID: r[8].decode(String?.self), notificationClass: r[9].decode(String.self),
            payload: Array(buffer: r[10].decode(ByteBuffer.self)), receivedAt: r[11].decode(Int64.self),
            expiresAt: r[12].decode(Int64?.self), deviceID: r[13].decode(String?.self), state: r[14].decode(Int64.self),
            rule: r[15].decode(String?.self)
        ).stored()
    }

    private func expire(now: UnixTime, atStart: Bool) async throws -> Int {
        let at = now.milliseconds
        let zero = Rule.notStoredExpirationZero.rawValue
        let expired = Rule.expired.rawValue
        let condition = atStart ? "(expires_at < \(at) OR expires_at IS NULL)" : "expires_at < \(at)"
        var query = PostgresQuery(
            unsafeSQL: """
                WITH changed AS (
                    UPDATE notifications SET state = 2, finished_at = $1,
                        rule = CASE WHEN expires_at IS NULL THEN $2 ELSE $3 END
                    WHERE state = 0 AND \(condition) RETURNING 1)
                SELECT COUNT(*) FROM changed
                """)
        query.binds.append(at)
        query.binds.append(zero)
        query.binds.append(expired)
        return try await count(query)
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        for try await value in try await client.query(query, logger: logger).decode(Int64.self) { return Int(value) }
        return 0
    }
}

extension AsyncSequence {
    /// Every element, in order.
    func all() async throws -> [Element] {
        var elements: [Element] = []
        for try await element in self { elements.append(element) }
        return elements
    }
}
