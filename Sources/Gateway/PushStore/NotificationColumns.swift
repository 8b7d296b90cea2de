import PushModel
import PushPolicy

/// A stored notification as the SQL backends' columns hold it: text, integers and bytes, one field per
/// column, so that an operator can read the tables with `sqlite3` or `psql`. (SQLite keeps the apns-id and
/// the token as bytes: `SQLiteStore+Keys.swift` reads them back as text for this.)
struct NotificationColumns: Sendable {
    /// The columns an insert writes: these 16 and `finished_at`.
    static let count = 17

    var teamID: String
    var apnsID: String
    var deviceToken: String
    var topic: String
    var bundleID: String
    var pushType: String
    var priority: Int64
    /// `Expiration.storedSeconds`: nil, store by default; 0, `apns-expiration: 0`; otherwise the expiry in Unix seconds.
    var expiration: Int64?
    var collapseID: String?
    var notificationClass: String
    var payload: [UInt8]
    var receivedAt: Int64
    var expiresAt: Int64?
    var deviceID: String?
    var state: Int64
    var rule: String?

    /// The typed notification, or an error naming the column that does not parse (a database edited by hand).
    func stored() throws -> StoredNotification {
        func bad(_ column: String, _ value: String) -> StoreError {
            StoreError("notification \(apnsID): column \(column) holds '\(value)', which this pushgate cannot read")
        }
        guard let id = APNsID(header: apnsID) else { throw bad("apns_id", apnsID) }
        guard let token = DeviceToken(deviceToken, lengths: 2...4096) else { throw bad("device_token", deviceToken) }
        guard let topic = Topic(topic) else { throw bad("topic", self.topic) }
        guard let type = PushType(rawValue: pushType) else { throw bad("push_type", pushType) }
        guard let priority = Priority(rawValue: Int(priority)) else { throw bad("priority", "\(self.priority)") }
        guard let kind = NotificationClass(rawValue: notificationClass) else { throw bad("class", notificationClass) }
        guard let state = NotificationState(rawValue: Int(state)) else { throw bad("state", "\(self.state)") }
        var rule: Rule?
        if let text = self.rule {
            guard let parsed = Rule(rawValue: text) else { throw bad("rule", text) }
            rule = parsed
        }
        var collapse: CollapseID?
        if let text = collapseID {
            guard let parsed = CollapseID(header: text) else { throw bad("collapse_id", text) }
            collapse = parsed
        }
        let expiration = Expiration(storedSeconds: self.expiration)
        let push = PushNotification(
            id: id, deviceToken: token, topic: topic, bundleID: bundleID, pushType: type, priority: priority,
            expiration: expiration, collapseID: collapse, notificationClass: kind, payload: payload,
            teamID: teamID.isEmpty ? nil : teamID, receivedAt: UnixTime(milliseconds: receivedAt))
        return StoredNotification(
            notification: push, expiresAt: expiresAt.map { UnixTime(milliseconds: $0) }, deviceID: deviceID,
            state: state, rule: rule)
    }
}

extension NotificationColumns {
    /// (In an extension, so that the memberwise initializer stays.)
    init(_ stored: StoredNotification) {
        let push = stored.notification
        teamID = push.teamID ?? ""
        apnsID = push.id.value
        deviceToken = push.deviceToken.hex
        topic = push.topic.value
        bundleID = push.bundleID
        pushType = push.pushType.rawValue
        priority = Int64(push.priority.rawValue)
        expiration = push.expiration.storedSeconds
        collapseID = push.collapseID?.value
        notificationClass = push.notificationClass.rawValue
        payload = push.payload
        receivedAt = push.receivedAt.milliseconds
        expiresAt = stored.expiresAt?.milliseconds
        deviceID = stored.deviceID
        state = Int64(stored.state.rawValue)
        rule = stored.rule?.rawValue
    }
}
