import Foundation
import PostgresNIO
import PushModel

/// Several nodes on one database (`ClusterStore`): claims, leases and takeovers, routed pushes, the
/// notices between nodes (LISTEN/NOTIFY) and what a node missed of them.
extension PostgresStore {
    public func claim(deviceIDs: [String]) async throws -> [String: ClaimedDevice] {
        guard !deviceIDs.isEmpty else { return [:] }
        let node = nodeID
        return try await client.withTransaction(logger: logger) { connection in
            try await Self.preferIndexes(connection, logger: self.logger)
            // Rows locked in id order: two nodes claiming overlapping sets cannot deadlock.
            var claimed: [(id: String, before: String?, claims: Int64)] = []
            for try await (id, before, claims) in try await connection.query(
                """
                UPDATE devices d SET owner = \(node), claims = d.claims + 1
                FROM (SELECT id, owner FROM devices WHERE id = ANY(\(deviceIDs)::text[]) ORDER BY id FOR UPDATE) old
                WHERE d.id = old.id RETURNING d.id, old.owner, d.claims
                """, logger: self.logger
            ).decode((String, String?, Int64).self) {
                claimed.append((id, before, claims))
            }
            return try await takeOwnership(of: claimed, on: connection)
        }
    }

    /// Tells the other nodes, in this transaction, that this node owns `devices` now (their claim
    /// numbers), and reads what it needs of each: budgets and pending notifications (claims, takeovers).
    func takeOwnership(
        of devices: [(id: String, before: String?, claims: Int64)], on connection: PostgresConnection
    ) async throws -> [String: ClaimedDevice] {
        guard !devices.isEmpty else { return [:] }
        let node = nodeID
        let ids = devices.map(\.id)
        try await notify(
            devices.map { .owner(deviceID: $0.id, node: node, claim: $0.claims) }, on: connection)
        var budgets: [String: [AppBudget]] = [:]
        for device in try await Self.budgets(connection, where: "device_id = ANY($1)", ids, logger: logger) {
            budgets[device.deviceID] = device.apps
        }
        var query = PostgresQuery(
            unsafeSQL: Self.selectNotification + " WHERE state = 0 AND device_id = ANY($1) ORDER BY seq")
        query.binds.append(ids)
        var pending: [String: [StoredNotification]] = [:]
        for try await row in try await connection.query(query, logger: logger) {
            let stored = try Self.notification(row)
            if let device = stored.deviceID { pending[device, default: []].append(stored) }
        }
        var subscriptions: [String: [StoredSubscription]] = [:]
        for subscription in try await Self.subscriptions(
            connection, where: "device_id = ANY($1)", ids, logger: logger)
        {
            subscriptions[subscription.deviceID, default: []].append(subscription)
        }
        var result: [String: ClaimedDevice] = [:]
        for device in devices {
            result[device.id] = ClaimedDevice(
                previousOwner: device.before == node ? nil : device.before, claim: device.claims,
                budgets: budgets[device.id] ?? [], pending: pending[device.id] ?? [],
                subscriptions: subscriptions[device.id] ?? [])
        }
        return result
    }

    /// Sends `notices` to the other nodes with this transaction's commit (and only if it commits), packed
    /// into as few NOTIFYs as fit.
    func notify(_ notices: [ClusterNotice], on connection: PostgresConnection) async throws {
        guard !notices.isEmpty else { return }
        let node = nodeID
        let payloads = ClusterMessage.payloads(notices.map { ClusterMessage(from: node, notice: $0).text })
        _ = try await connection.query(
            "SELECT COUNT(pg_notify(\(Self.channel), n)) FROM UNNEST(\(payloads)::text[]) AS n", logger: logger
        ).decode(Int64.self).all()
    }

    /// Each node's lease: how long ago (ms, by the database's clock) it was last renewed (`pushgate fleet
    /// status`). A node missing here has not started, or another node took its devices over.
    public func leaseAges() async throws -> [String: Int64] {
        var ages: [String: Int64] = [:]
        for try await (node, age) in try await client.query(
            PostgresQuery(unsafeSQL: "SELECT node_id, \(Self.databaseNow) - renewed_at FROM nodes"), logger: logger
        ).decode((String, Int64).self) {
            ages[node] = age
        }
        return ages
    }

    public func renewLease(routeAddress: String?) async throws {
        var query = PostgresQuery(
            unsafeSQL: """
                INSERT INTO nodes (node_id, renewed_at, address) VALUES ($1, \(Self.databaseNow), $2)
                ON CONFLICT (node_id) DO UPDATE SET renewed_at = excluded.renewed_at, address = excluded.address
                """)
        query.binds.append(nodeID)
        query.binds.append(routeAddress)
        _ = try await client.query(query, logger: logger).all()
    }

    public func routeAddresses() async throws -> [String: String] {
        var addresses: [String: String] = [:]
        for try await (node, address) in try await client.query(
            "SELECT node_id, address FROM nodes WHERE address IS NOT NULL", logger: logger
        ).decode((String, String).self) {
            addresses[node] = address
        }
        return addresses
    }

    public func fleetSecret() async throws -> String {
        var generator = SystemRandomNumberGenerator()
        let made = Hex.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
        // The first node to ask makes it; every other reads that one.
        try await client.query(
            "INSERT INTO fleet (id, secret) VALUES (1, \(made)) ON CONFLICT (id) DO NOTHING", logger: logger)
        for try await secret in try await client.query("SELECT secret FROM fleet WHERE id = 1", logger: logger)
            .decode(String.self)
        {
            return secret
        }
        throw StoreError("the fleet's secret is missing from the database at \(place)")
    }

    public func takeOver(leaseMilliseconds: Int64) async throws -> [TakenDevice] {
        let node = nodeID
        return try await client.withTransaction(logger: logger) { connection in
            // The stale leases are deleted by the statement that names their nodes gone: the survivor that
            // deletes one holds its row, so one survivor takes each dead node's devices. The owners of
            // devices that hold no lease at all (gone before they wrote one) are gone too; they are found
            // by a walk of the owner index, one probe a distinct owner, so that a renewal that finds no
            // one gone (nearly all of them) reads no device row.
            var find = PostgresQuery(
                unsafeSQL: """
                    WITH RECURSIVE owners AS (
                        SELECT MIN(owner) AS o FROM devices
                        UNION ALL
                        SELECT (SELECT MIN(owner) FROM devices WHERE owner > owners.o) FROM owners
                        WHERE owners.o IS NOT NULL),
                    dead AS (
                        DELETE FROM nodes WHERE node_id <> $1 AND renewed_at < \(Self.databaseNow) - $2
                        RETURNING node_id)
                    SELECT node_id FROM dead
                    UNION
                    SELECT o FROM owners WHERE o IS NOT NULL AND o <> $1 AND o NOT IN (SELECT node_id FROM nodes)
                    """)
            find.binds.append(node)
            find.binds.append(leaseMilliseconds)
            let gone = try await connection.query(find, logger: self.logger).decode(String.self).all()
            guard !gone.isEmpty else { return [] }
            var move = PostgresQuery(
                unsafeSQL: """
                    UPDATE devices d SET owner = $1, claims = d.claims + 1
                    FROM (SELECT id FROM devices WHERE owner = ANY($2::text[]) ORDER BY id FOR UPDATE) gone
                    WHERE d.id = gone.id RETURNING d.id, d.claims
                    """)
            move.binds.append(node)
            move.binds.append(gone)
            var taken: [(id: String, before: String?, claims: Int64)] = []
            for try await (id, claims) in try await connection.query(move, logger: self.logger).decode(
                (String, Int64).self)
            {
                taken.append((id, nil, claims))
            }
            let claimed = try await takeOwnership(of: taken, on: connection)
            return taken.compactMap { device in
                claimed[device.id].map { TakenDevice(deviceID: device.id, claimed: $0) }
            }
        }
    }

    public func undecided(olderThan cutoff: UnixTime) async throws -> [NotificationKey] {
        try await undecidedKeys(receivedBefore: cutoff.milliseconds)
    }

    /// Notifications for this node's devices that no policy has decided (pending, no rule), oldest first.
    func undecidedKeys(receivedBefore: Int64) async throws -> [NotificationKey] {
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
        return try await client.withTransaction(logger: logger) { connection in
            try await Self.preferIndexes(connection, logger: self.logger)
            var found: [StoredNotification] = []
            for try await row in try await connection.query(query, logger: self.logger) {
                found.append(try Self.notification(row))
            }
            return found
        }
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
        for try await (token, device, bundle, unregistered, activity) in try await client.query(
            """
            SELECT t.token, t.device_id, t.bundle_id, t.unregistered_at, t.activity FROM tokens t
            JOIN devices d ON d.id = t.device_id WHERE d.owner IS DISTINCT FROM \(node) ORDER BY t.seq
            """, logger: logger
        ).decode((String, String, String, Int64?, String?).self) {
            notices.append(
                .token(
                    StoredToken(
                        token: token, deviceID: device, bundleID: bundle,
                        unregisteredAt: unregistered.map { UnixTime(milliseconds: $0) }, activity: activity)))
        }
        notices += owners
        for key in try await undecidedKeys(receivedBefore: .max) {
            notices.append(.route(node: node, apnsID: key.apnsID, teamID: key.teamID))
        }
        // Each channel's newest broadcast: fanned out again here only to subscribers it has not reached.
        for broadcast in try await newestBroadcasts(deliverableAt: nil) {
            notices.append(.broadcast(BroadcastKey(channelID: broadcast.channelID, sequence: broadcast.sequence)))
        }
        return notices
    }

    public func listen(ready: @Sendable () -> Void, _ receive: @Sendable ([ClusterMessage]) -> Void) async throws {
        let node = nodeID
        try await client.withConnection { connection in
            try await connection.listen(on: Self.channel) { notifications in
                ready()
                for try await notification in notifications {
                    var messages: [ClusterMessage] = []
                    for (line, message) in ClusterMessage.lines(of: notification.payload, skipping: node) {
                        guard let message else {
                            self.logger.warning(
                                "skipped a notice this pushgate cannot read", metadata: ["notice": "\(line)"])
                            continue
                        }
                        if message.from != node { messages.append(message) }
                    }
                    if !messages.isEmpty { receive(messages) }
                }
            }
        }
    }
}
