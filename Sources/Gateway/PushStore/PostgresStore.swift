import Logging
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
    let client: PostgresClient
    let logger = Logger(label: "pushgate.store.postgres")

    /// `postgres://user:password@host:port/database` (`postgresql://` too; port 5432 by default);
    /// `nodeID` names this node among those sharing the database (see `ClusterStore`).
    public init(url: String, nodeID: String = "pushgate") throws {
        self.nodeID = nodeID
        let location = try PostgresLocation(url: url)
        place = location.place
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.password,
            database: location.database, tls: .disable)
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

    public static func redacted(_ url: String) -> String { PostgresLocation.redacted(url) }

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
        try await renewLease(routeAddress: nil)
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
        for try await (token, device, bundle, unregistered, activity) in try await client.query(
            "SELECT token, device_id, bundle_id, unregistered_at, activity FROM tokens ORDER BY seq", logger: logger
        ).decode((String, String, String, Int64?, String?).self) {
            snapshot.tokens.append(
                StoredToken(
                    token: token, deviceID: device, bundleID: bundle,
                    unregisteredAt: unregistered.map { UnixTime(milliseconds: $0) }, activity: activity))
        }
        for try await (id, bundle, policy, created, deleted) in try await client.query(
            "SELECT id, bundle_id, storage_policy, created_at, deleted_at FROM channels ORDER BY seq", logger: logger
        ).decode((String, String, Int, Int64, Int64?).self) {
            snapshot.channels.append(
                StoredChannel(
                    id: id, bundleID: bundle, storagePolicy: policy, createdAt: UnixTime(milliseconds: created),
                    deletedAt: deleted.map { UnixTime(milliseconds: $0) }))
        }
        snapshot.budgets = try await client.withConnection { connection in
            try await Self.budgets(
                connection, where: "device_id NOT IN \(self.ownedElsewhere)", nodeID, logger: self.logger)
        }
        let mine = "device_id NOT IN \(ownedElsewhere)"
        snapshot.subscriptions = try await client.withConnection { connection in
            try await Self.subscriptions(connection, where: mine, self.nodeID, logger: self.logger)
        }
        snapshot.broadcasts = try await newestBroadcasts(deliverableAt: now)
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
            try await Self.preferIndexes(connection, logger: logger)
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
                // Rows locked in id order, as claims lock them: a commit and a claim of overlapping
                // devices wait for each other instead of deadlocking.
                let ids = marks.keys.sorted()
                let times = ids.map { marks[$0]!.milliseconds }
                var update = PostgresQuery(
                    unsafeSQL: """
                        UPDATE devices d SET \(column) = x.t FROM UNNEST($1::text[], $2::bigint[]) AS x(i, t),
                            (SELECT id FROM devices WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE) locked
                        WHERE d.id = x.i AND locked.id = x.i
                        """)
                update.binds.append(ids)
                update.binds.append(times)
                try await connection.query(update, logger: logger)
            }
            for channel in batch.channels {
                // A handful a minute at most: one statement each.
                try await connection.query(
                    """
                    INSERT INTO channels (id, bundle_id, storage_policy, created_at, deleted_at)
                    VALUES (\(channel.id), \(channel.bundleID), \(channel.storagePolicy), \(channel.createdAt.milliseconds),
                        \(channel.deletedAt?.milliseconds))
                    ON CONFLICT (id) DO UPDATE SET deleted_at = excluded.deleted_at
                    """, logger: logger)
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
                // '' for an app's own token (no activity key is empty).
                let activities = tokens.map { $0.activity ?? "" }
                try await connection.query(
                    """
                    INSERT INTO tokens (token, device_id, bundle_id, unregistered_at, activity)
                    SELECT t, d, b, NULLIF(u, -1), NULLIF(a, '')
                    FROM UNNEST(\(values)::text[], \(devices)::text[], \(bundles)::text[], \(unregistered)::bigint[],
                        \(activities)::text[])
                        AS x(t, d, b, u, a)
                    ON CONFLICT (token) DO UPDATE SET unregistered_at = excluded.unregistered_at
                    """, logger: logger)
            }
            try await Self.commitBroadcasts(batch, on: connection, logger: logger)
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
                // In id order: two nodes writing outcomes of the same pushes (a device that just moved)
                // lock their rows in one order.
                let outcomes = order.sorted { ($0.high, $0.low) < ($1.high, $1.low) }.map { merged[$0]! }
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
                // Only the owner's: a node that just lost a device must not overwrite what its new owner
                // writes (each row's device checked in the statement that writes it: one round trip).
                // In key order, as one device's rows are written by one node at a time anyway. Each row is
                // updated in place where it exists (no index changes: PostgreSQL updates it on its page,
                // where migration 13 leaves room), rather than deleted and inserted again with its index
                // entries — each wake changes its app's budget.
                let node = self.nodeID
                let rows = batch.budgets.keys.sorted().flatMap { device in
                    (batch.budgets[device] ?? []).sorted { $0.bundleID < $1.bundleID }.map { (device, $0) }
                }
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
                        WHERE EXISTS (SELECT 1 FROM devices v WHERE v.id = x.d AND (v.owner = \(node) OR v.owner IS NULL))
                        ON CONFLICT (device_id, bundle_id) DO UPDATE SET tokens = excluded.tokens,
                            strikes = excluded.strikes, settled_at = excluded.settled_at,
                            cooling_until = excluded.cooling_until, app_state = excluded.app_state
                        """, logger: logger)
                }
                // Of the owned devices that lost an app's budget (its state became idle), the rows of apps
                // the batch no longer lists go: a statement and a probe a device that a wake and a
                // completion never need. Each (device, app) kept as one text, the device's length first (so
                // no two pairs make the same text): `<> ALL` of an array looks it up in a hash, where an
                // anti-join against the UNNEST would be a nested loop (merge and hash joins are off:
                // `preferIndexes`), 20 ms a batch of 450.
                let pruned = batch.budgetsPruned.filter { batch.budgets[$0] != nil }.sorted()
                if !pruned.isEmpty {
                    let kept = rows.filter { batch.budgetsPruned.contains($0.0) }.map {
                        "\($0.0.utf8.count):\($0.0)\($0.1.bundleID)"
                    }
                    try await connection.query(
                        """
                        DELETE FROM app_budgets a WHERE a.device_id = ANY(\(pruned)::text[])
                            AND EXISTS (SELECT 1 FROM devices v WHERE v.id = a.device_id
                                AND (v.owner = \(node) OR v.owner IS NULL))
                            AND octet_length(a.device_id) || ':' || a.device_id || a.bundle_id <> ALL(\(kept)::text[])
                        """, logger: logger)
                }
            }
            try await notify(batch.notices, on: connection)
        }
    }

    /// For the rest of the transaction, a batch's rows are looked up one by one in an index: no
    /// sequential scan, no merge or hash join. A batch joins its rows (UNNEST of a few hundred keys) to a
    /// table by key, and a nested loop over the key's index reads only those rows. Costing random reads as
    /// if from disk, and without statistics on a fresh table, the planner picks otherwise once a batch is
    /// large beside the table or a key is not known to be unique — measured:
    /// - a sequential scan and a hash join: 9 million rows read during one fan-out of 30,000 pushes
    ///   (`Benchmarks/fleet.sh 30000 3`);
    /// - a merge join for the acknowledgements' update (by apns-id, which the planner cannot know is
    ///   nearly unique: the unique index is on apns-id and team): it walked the apns-id index over every
    ///   notification, 20,000 rows for a batch of 450, 53 buffers a row (`fleet.sh 15000 1 5`, auto_explain).
    /// One statement, one round trip.
    static func preferIndexes(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            SELECT set_config('enable_seqscan', 'off', true), set_config('enable_mergejoin', 'off', true),
                set_config('enable_hashjoin', 'off', true)
            """, logger: logger)
    }

    public func prune(finishedBefore: UnixTime, now: UnixTime) async throws -> PruneResult {
        let expired = try await expire(now: now, atStart: false)
        let before = finishedBefore.milliseconds
        let removed = try await count(
            "WITH gone AS (DELETE FROM notifications WHERE state <> 0 AND finished_at < \(before) RETURNING 1) SELECT COUNT(*) FROM gone"
        )
        try await client.query("DELETE FROM broadcasts WHERE deliverable_until < \(now.milliseconds)", logger: logger)
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

    func expire(now: UnixTime, atStart: Bool) async throws -> Int {
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

    func count(_ query: PostgresQuery) async throws -> Int {
        for try await value in try await client.query(query, logger: logger).decode(Int64.self) { return Int(value) }
        return 0
    }
}
