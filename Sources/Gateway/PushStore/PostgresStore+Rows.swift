import PostgresNIO
import PushModel

/// Rows into stored values.
extension PostgresStore {
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
}

extension AsyncSequence {
    /// Every element, in order.
    func all() async throws -> [Element] {
        var elements: [Element] = []
        for try await element in self { elements.append(element) }
        return elements
    }
}
