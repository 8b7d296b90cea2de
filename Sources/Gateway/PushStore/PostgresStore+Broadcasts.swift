import Logging
import PostgresNIO
import PushModel

/// Broadcasts and channel subscriptions on PostgreSQL: one row a broadcast, a row a subscription with
/// its cursor, written as arrays like every other change.
extension PostgresStore {
    static func commitBroadcasts(_ batch: StoreBatch, on connection: PostgresConnection, logger: Logger) async throws {
        if !batch.broadcasts.isEmpty {
            let rows = batch.broadcasts
            try await connection.query(
                """
                INSERT INTO broadcasts (channel_id, sequence, apns_id, team_id, bundle_id, priority, expiration,
                    payload, accepted_at, deliverable_until)
                SELECT c, s, a, t, b, p, NULLIF(e, -1), y, ac, d
                FROM UNNEST(\(rows.map(\.channelID))::text[], \(rows.map(\.sequence))::bigint[],
                    \(rows.map(\.apnsID))::text[], \(rows.map(\.teamID))::text[], \(rows.map(\.bundleID))::text[],
                    \(rows.map { Int64($0.priority) })::bigint[], \(rows.map { $0.expiration ?? -1 })::bigint[],
                    \(rows.map { ByteBuffer(bytes: $0.payload) })::bytea[],
                    \(rows.map(\.acceptedAt.milliseconds))::bigint[], \(rows.map(\.deliverableUntil.milliseconds))::bigint[])
                    AS x(c, s, a, t, b, p, e, y, ac, d)
                ON CONFLICT (channel_id, sequence) DO NOTHING
                """, logger: logger)
        }
        if !batch.subscriptions.isEmpty {
            let rows = batch.subscriptions
            try await connection.query(
                """
                INSERT INTO subscriptions (device_id, channel_id, bundle_id, acknowledged)
                SELECT d, c, b, a FROM UNNEST(\(rows.map(\.deviceID))::text[], \(rows.map(\.channelID))::text[],
                    \(rows.map(\.bundleID))::text[], \(rows.map(\.acknowledged))::bigint[]) AS x(d, c, b, a)
                ON CONFLICT (device_id, channel_id) DO UPDATE SET bundle_id = excluded.bundle_id,
                    acknowledged = excluded.acknowledged
                """, logger: logger)
        }
        if !batch.unsubscribed.isEmpty {
            let keys = batch.unsubscribed
            try await connection.query(
                """
                DELETE FROM subscriptions s USING UNNEST(\(keys.map(\.deviceID))::text[], \(keys.map(\.channelID))::text[])
                    AS x(d, c) WHERE s.device_id = x.d AND s.channel_id = x.c
                """, logger: logger)
        }
        if !batch.cursors.isEmpty {
            // In key order: two nodes moving cursors of one device (it just moved) lock rows in one order.
            let keys = batch.cursors.keys.sorted()
            let sequences = keys.map { batch.cursors[$0]! }
            try await connection.query(
                """
                UPDATE subscriptions s SET acknowledged = GREATEST(s.acknowledged, x.a)
                FROM UNNEST(\(keys.map(\.deviceID))::text[], \(keys.map(\.channelID))::text[], \(sequences)::bigint[])
                    AS x(d, c, a)
                WHERE s.device_id = x.d AND s.channel_id = x.c
                """, logger: logger)
        }
    }

    /// Subscriptions of the devices `condition` picks (`$1` bound to `value`), by device then channel.
    static func subscriptions<Value: PostgresNonThrowingEncodable & Sendable>(
        _ connection: PostgresConnection, where condition: String, _ value: Value, logger: Logger
    ) async throws -> [StoredSubscription] {
        var query = PostgresQuery(
            unsafeSQL: """
                SELECT device_id, channel_id, bundle_id, acknowledged FROM subscriptions
                WHERE \(condition) ORDER BY device_id, channel_id
                """)
        query.binds.append(value)
        var found: [StoredSubscription] = []
        for try await (device, channel, bundle, acknowledged) in try await connection.query(query, logger: logger)
            .decode((String, String, String, Int64).self)
        {
            found.append(
                StoredSubscription(deviceID: device, channelID: channel, bundleID: bundle, acknowledged: acknowledged))
        }
        return found
    }

    static let selectBroadcast = """
        SELECT channel_id, sequence, apns_id, team_id, bundle_id, priority, expiration, payload, accepted_at,
            deliverable_until FROM broadcasts
        """

    func readBroadcasts(_ query: PostgresQuery) async throws -> [StoredBroadcast] {
        var found: [StoredBroadcast] = []
        for try await (channel, sequence, id, team, bundle, priority, expiration, payload, accepted, until)
            in try await client.query(query, logger: logger).decode(
                (String, Int64, String, String, String, Int64, Int64?, ByteBuffer, Int64, Int64).self)
        {
            found.append(
                StoredBroadcast(
                    channelID: channel, sequence: sequence, apnsID: id, teamID: team, bundleID: bundle,
                    priority: Int(priority), expiration: expiration, payload: Array(buffer: payload),
                    acceptedAt: UnixTime(milliseconds: accepted), deliverableUntil: UnixTime(milliseconds: until)))
        }
        return found
    }

    /// Each channel's newest broadcast still deliverable at `now` (nil: the database's clock).
    func newestBroadcasts(deliverableAt now: UnixTime?) async throws -> [StoredBroadcast] {
        let at = now.map { String($0.milliseconds) } ?? Self.databaseNow
        return try await readBroadcasts(
            PostgresQuery(
                unsafeSQL: "SELECT DISTINCT ON (channel_id) " + Self.selectBroadcast.dropFirst("SELECT ".count)
                    + " WHERE deliverable_until >= \(at) ORDER BY channel_id, sequence DESC"))
    }

    public func broadcasts(_ stamps: [BroadcastKey]) async throws -> [StoredBroadcast] {
        guard !stamps.isEmpty else { return [] }
        var query = PostgresQuery(
            unsafeSQL: Self.selectBroadcast
                + """
                 JOIN UNNEST($1::text[], $2::bigint[]) WITH ORDINALITY AS k(c, s, o)
                    ON channel_id = k.c AND sequence = k.s ORDER BY k.o
                """)
        query.binds.append(stamps.map(\.channelID))
        query.binds.append(stamps.map(\.sequence))
        return try await readBroadcasts(query)
    }
}
