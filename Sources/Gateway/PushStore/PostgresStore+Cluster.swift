import Foundation
import PostgresNIO
import PushModel

/// Several nodes on one database (`ClusterStore`): claims, leases and takeovers, routed pushes, the
/// notices between nodes (LISTEN/NOTIFY) and what a node missed of them.
extension PostgresStore {
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
                taken.map {
                    ClusterMessage(from: node, notice: .owner(deviceID: $0.id, node: node, claim: $0.claims)).text
                })
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
}
