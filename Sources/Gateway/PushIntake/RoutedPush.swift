import NIOCore
import PushModel

/// A push one node accepted for a device another node runs, as it travels between them: the notification,
/// the device it is for, when the policy stops keeping it (the store's row, minus its state), and whether
/// the sender has stored it already.
public struct RoutedPush: Sendable, Equatable {
    public var notification: PushNotification
    public var deviceID: String
    /// nil: never stored (`apns-expiration: 0`).
    public var expiresAt: UnixTime?
    /// Already in the store (a held push handed on after a move, or one that came through the store):
    /// the owner runs it and records its decision. Not stored: a new push, which the owner stores with
    /// its decision before it answers, and whose provider's 200 waits for that answer.
    public var stored: Bool

    public init(notification: PushNotification, deviceID: String, expiresAt: UnixTime?, stored: Bool) {
        self.notification = notification
        self.deviceID = deviceID
        self.expiresAt = expiresAt
        self.stored = stored
    }
}

/// What the owner did with one routed push.
public enum RouteOutcome: Sendable, Equatable {
    /// Taken: stored with its decision (a new push; durable when this is said) or run (a stored one).
    case taken
    /// Not taken (a device the owner does not run or know, its store failed, no answer): the sender stores
    /// it and hands it over through the store.
    case untaken
    /// Refused as the provider's request would have been on the owner (`TooManyRequests`: the device's
    /// queue is full); the sender answers its provider with it.
    case refused(RejectionReason)
}

/// A batch of routed pushes as one request body (`POST /pushgate/v1/routes`): many pushes per request and
/// per write. Each field is written as the store's column holds it (text, integers, bytes), with its
/// length before it, after a four-byte mark that names the format's version.
public enum RouteBatch {
    /// The request's path on the owner's provider API.
    public static let path = "/pushgate/v1/routes"
    /// Version 2: each push says whether it is stored already (version 1 had every push stored by its
    /// sender; a node of either version refuses the other's batches, and the sender then goes through the
    /// store).
    static let mark: [UInt8] = Array("PGR2".utf8)
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
        return 8 * 3 + 2 + 2 * 11 + 4 + 36 + n.deviceToken.hex.utf8.count + n.topic.value.utf8.count
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
        buffer.writeInteger(UInt8(push.stored ? 1 : 0))
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
        guard buffer.readBytes(length: mark.count) == mark else { throw RouteBatchError("no route batch (PGR2)") }
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
        guard let flag = buffer.readInteger(as: UInt8.self), flag <= 1 else { throw bad("stored") }
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
            notification: push, deviceID: deviceID, expiresAt: expires < 0 ? nil : UnixTime(milliseconds: expires),
            stored: flag == 1)
    }
}

/// The owner's answer to a route batch (the body of its 200): one line for each push not taken, its index
/// in the batch and `untaken` or Apple's reason it was refused with; every push not listed was taken.
public enum RouteAnswer {
    /// The body for `outcomes`, one a push in the batch's order.
    public static func encode(_ outcomes: [RouteOutcome]) -> String {
        var lines: [String] = []
        for (index, outcome) in outcomes.enumerated() {
            switch outcome {
            case .taken: continue
            case .untaken: lines.append("\(index) untaken")
            case .refused(let reason): lines.append("\(index) \(reason.rawValue)")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The outcomes of a batch of `count` pushes from its answer's body; a line that does not read leaves
    /// its push untaken (the sender then goes through the store, which is always safe).
    public static func decode(_ body: String, count: Int) -> [RouteOutcome] {
        var outcomes = [RouteOutcome](repeating: .taken, count: count)
        for line in body.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 1)
            guard fields.count == 2, let index = Int(fields[0]), outcomes.indices.contains(index) else { continue }
            outcomes[index] = RejectionReason(rawValue: String(fields[1])).map { .refused($0) } ?? .untaken
        }
        return outcomes
    }
}

/// A route batch that does not read.
public struct RouteBatchError: Error, Equatable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// Where a node takes the pushes other nodes route to it (the device hub).
public protocol RouteIntake: Sendable {
    /// Pushes other nodes accepted for devices this node runs, run through their devices' policy here,
    /// each once however often it comes, in order. The future (on `eventLoop`) has one outcome a push, once
    /// each new push taken is durable here.
    func routed(_ pushes: [RoutedPush], from node: String, on eventLoop: any EventLoop)
        -> EventLoopFuture<[RouteOutcome]>
}

/// How a node hands pushes to the node that runs their device (the node links).
public protocol RouteLink: Sendable {
    /// Sends `push` to `node`; `answered` is called once, on `loop` when given, with what the owner did
    /// with it: `.untaken` too when there is no link to it, the link failed, or the node did not answer in
    /// time (the caller then goes through the store). Never blocks: pushes are queued and sent together.
    func forward(
        _ push: RoutedPush, to node: String, answeringOn loop: (any EventLoop)?,
        answered: @escaping @Sendable (RouteOutcome) -> Void)
    /// The nodes it has a link to (their address known), by name.
    var linkedNodes: [String] { get }
}
