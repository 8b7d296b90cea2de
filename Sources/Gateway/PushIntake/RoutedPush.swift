import NIOCore
import PushModel

/// A push one node stored for a device another node runs, as it travels between them: the notification,
/// the device it is for, and when the policy stops keeping it (the store's row, minus its state).
public struct RoutedPush: Sendable, Equatable {
    public var notification: PushNotification
    public var deviceID: String
    /// nil: never stored (`apns-expiration: 0`).
    public var expiresAt: UnixTime?

    public init(notification: PushNotification, deviceID: String, expiresAt: UnixTime?) {
        self.notification = notification
        self.deviceID = deviceID
        self.expiresAt = expiresAt
    }
}

/// A batch of routed pushes as one request body (`POST /pushgate/v1/routes`): many pushes per request and
/// per write. Each field is written as the store's column holds it (text, integers, bytes), with its
/// length before it, after a four-byte mark that names the format's version.
public enum RouteBatch {
    /// The request's path on the owner's provider API.
    public static let path = "/pushgate/v1/routes"
    static let mark: [UInt8] = Array("PGR1".utf8)
    /// The most bytes a batch's body may hold (the sender splits larger batches; the receiver refuses them).
    public static let largestBody = 1 << 20

    /// The bytes of `pushes`, in order.
    public static func encode(_ pushes: [RoutedPush], allocator: ByteBufferAllocator = ByteBufferAllocator())
        -> ByteBuffer
    {
        var buffer = allocator.buffer(capacity: 64 + pushes.reduce(0) { $0 + 256 + $1.notification.payload.count })
        buffer.writeBytes(mark)
        buffer.writeInteger(UInt32(pushes.count))
        for push in pushes { append(push, to: &buffer) }
        return buffer
    }

    /// The bytes one push adds to a batch (what a sender counts against `largestBody`).
    public static func size(of push: RoutedPush) -> Int {
        let n = push.notification
        return 8 * 3 + 1 + 2 * 11 + 4 + 36 + n.deviceToken.hex.utf8.count + n.topic.value.utf8.count
            + n.bundleID.utf8.count + n.pushType.rawValue.utf8.count + (n.collapseID?.value.utf8.count ?? 0)
            + n.notificationClass.rawValue.utf8.count + (n.mismatch?.rawValue.utf8.count ?? 0)
            + (n.teamID?.utf8.count ?? 0) + push.deviceID.utf8.count + n.payload.count
    }

    static func append(_ push: RoutedPush, to buffer: inout ByteBuffer) {
        let n = push.notification
        for text in [n.id.value, n.deviceToken.hex, n.topic.value, n.bundleID, n.pushType.rawValue] {
            writeText(text, to: &buffer)
        }
        buffer.writeInteger(UInt8(n.priority.rawValue))
        buffer.writeInteger(n.expiration.storedSeconds ?? -1)
        for text in [
            n.collapseID?.value ?? "", n.notificationClass.rawValue, n.mismatch?.rawValue ?? "", n.teamID ?? "",
            push.deviceID,
        ] {
            writeText(text, to: &buffer)
        }
        buffer.writeInteger(n.receivedAt.milliseconds)
        buffer.writeInteger(push.expiresAt?.milliseconds ?? -1)
        buffer.writeInteger(UInt32(n.payload.count))
        buffer.writeBytes(n.payload)
    }

    private static func writeText(_ text: String, to buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt16(truncatingIfNeeded: text.utf8.count))
        buffer.writeString(text)
    }

    /// The pushes of a body, or an error naming what does not read (a sender of another version, or bytes
    /// that are no batch).
    public static func decode(_ body: ByteBuffer) throws(RouteBatchError) -> [RoutedPush] {
        var buffer = body
        guard buffer.readBytes(length: mark.count) == mark else { throw RouteBatchError("no route batch (PGR1)") }
        guard let count = buffer.readInteger(as: UInt32.self) else { throw RouteBatchError("no count") }
        var pushes: [RoutedPush] = []
        pushes.reserveCapacity(Int(min(count, 4096)))
        for index in 0..<Int(count) {
            pushes.append(try read(&buffer, index: index))
        }
        guard buffer.readableBytes == 0 else {
            throw RouteBatchError("\(buffer.readableBytes) bytes after the last push")
        }
        return pushes
    }

    private static func read(_ buffer: inout ByteBuffer, index: Int) throws(RouteBatchError) -> RoutedPush {
        func bad(_ field: String) -> RouteBatchError { RouteBatchError("push \(index): \(field) does not read") }
        func text(_ field: String) throws(RouteBatchError) -> String {
            guard let length = buffer.readInteger(as: UInt16.self), let value = buffer.readString(length: Int(length))
            else { throw bad(field) }
            return value
        }
        func integer(_ field: String) throws(RouteBatchError) -> Int64 {
            guard let value = buffer.readInteger(as: Int64.self) else { throw bad(field) }
            return value
        }
        guard let id = APNsID(header: try text("apns-id")) else { throw bad("apns-id") }
        guard let token = DeviceToken(try text("device token"), lengths: 2...4096) else { throw bad("device token") }
        guard let topic = Topic(try text("topic")) else { throw bad("topic") }
        let bundleID = try text("bundle id")
        guard let type = PushType(rawValue: try text("push type")) else { throw bad("push type") }
        guard let raw = buffer.readInteger(as: UInt8.self), let priority = Priority(rawValue: Int(raw)) else {
            throw bad("priority")
        }
        let stored = try integer("expiration")
        let expiration = Expiration(storedSeconds: stored == -1 ? nil : stored)
        let collapseText = try text("collapse id")
        var collapse: CollapseID?
        if !collapseText.isEmpty {
            guard let parsed = CollapseID(header: collapseText) else { throw bad("collapse id") }
            collapse = parsed
        }
        guard let kind = NotificationClass(rawValue: try text("class")) else { throw bad("class") }
        let mismatchText = try text("mismatch")
        var mismatch: PushTypeMismatch?
        if !mismatchText.isEmpty {
            guard let parsed = PushTypeMismatch(rawValue: mismatchText) else { throw bad("mismatch") }
            mismatch = parsed
        }
        let teamID = try text("team id")
        let deviceID = try text("device id")
        let received = try integer("received at")
        let expires = try integer("expires at")
        guard let length = buffer.readInteger(as: UInt32.self), let payload = buffer.readBytes(length: Int(length))
        else { throw bad("payload") }
        let push = PushNotification(
            id: id, deviceToken: token, topic: topic, bundleID: bundleID, pushType: type, priority: priority,
            expiration: expiration, collapseID: collapse, notificationClass: kind, mismatch: mismatch, payload: payload,
            teamID: teamID.isEmpty ? nil : teamID, receivedAt: UnixTime(milliseconds: received))
        return RoutedPush(
            notification: push, deviceID: deviceID, expiresAt: expires < 0 ? nil : UnixTime(milliseconds: expires))
    }
}

/// A route batch that does not read.
public struct RouteBatchError: Error, Equatable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// Where a node takes the pushes other nodes route to it (the device hub).
public protocol RouteIntake: Sendable {
    /// Pushes another node stored for devices this node runs, run through their devices' policy here,
    /// each once however often it comes. Returns the ids of those it did not take (a device it does not
    /// know yet): the sender hands those to it through the store instead.
    func routed(_ pushes: [RoutedPush], from node: String) -> [APNsID]
}

/// How a node hands pushes to the node that runs their device (the node links).
public protocol RouteLink: Sendable {
    /// Sends `push` to `node`. `orElse` is called, once, when it did not reach that node — there is no
    /// link to it, the link failed, or the node did not answer in time or did not take it — and the caller
    /// then hands it over through the store. Never blocks: pushes are queued and sent together.
    func forward(_ push: RoutedPush, to node: String, orElse: @escaping @Sendable () -> Void)
    /// The nodes it has a link to (their address known), by name.
    var linkedNodes: [String] { get }
}
