import Foundation

/// A message that could not be read, with what was wrong with it.
public struct ProtocolError: Error, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Every message type's wire name (`type`), once: both directions' decoding and encoding use it.
public enum MessageType: String, CaseIterable, Sendable {
    // Device → gateway.
    case register
    case hello
    case install
    case uninstall
    case ack
    case complete
    case notWoken = "not_woken"
    case keepAlive = "keep_alive"
    case appState = "app_state"
    case conditions
    case rebooted
    case requestActivityToken = "request_activity_token"
    case subscribeChannel = "subscribe_channel"
    case unsubscribeChannel = "unsubscribe_channel"
    case frequentPushes = "frequent_pushes"
    // Gateway → device.
    case registered
    case welcome
    case installed
    case uninstalled
    case notification
    case keepAliveAck = "keep_alive_ack"
    case closing
    case error
    case activityToken = "activity_token"
    case channelSubscribed = "channel_subscribed"
}

/// The JSON form of the messages: a flat object with `type` and the fields of that type.
struct Envelope: Codable {
    var type: String
    var device_id: String?
    var secret: String?
    var enrolment: String?
    var bundle_id: String?
    var apns_id: String?
    var result: String?
    var sequence: Int?
    var state: String?
    var low_power_mode: Bool?
    var debugger_attached: Bool?
    var other_apps_wakes_per_day: Double?
    var background_app_refresh_off: Bool?
    var apps: [InstalledApp]?
    var token: String?
    var keep_alive_seconds: Int?
    var notification: Delivery?
    var notifications: [Delivery]?
    var reason: String?
    var reconnect_after_ms: Int?
    var message: String?
    var attributes_type: String?
    var activity_id: String?
    var channel_id: String?
    var enabled: Bool?

    init(type: MessageType) { self.type = type.rawValue }

    /// The Live Activity token an `activity_token` names: `attributes_type` (push-to-start) or
    /// `activity_id` (an activity's updates), exactly one.
    func purpose() throws(ProtocolError) -> ActivityTokenPurpose {
        switch (attributes_type, activity_id) {
        case (let type?, nil) where !type.isEmpty: return .pushToStart(attributesType: type)
        case (nil, let id?) where !id.isEmpty: return .update(activityID: id)
        default: throw ProtocolError("\(type): needs one of \"attributes_type\" or \"activity_id\"")
        }
    }

    mutating func set(_ purpose: ActivityTokenPurpose) {
        switch purpose {
        case .pushToStart(let type): attributes_type = type
        case .update(let id): activity_id = id
        }
    }

    /// Reads one message's JSON, or says it is none.
    static func read(_ bytes: some Collection<UInt8>, expected: String) throws(ProtocolError) -> Envelope {
        do {
            return try decoder.decode(Envelope.self, from: Data(bytes))
        } catch {
            throw ProtocolError("not a \(expected): expected a JSON object with a \"type\"")
        }
    }

    /// A field the message's type requires.
    func need<T>(_ value: T?, _ field: String) throws(ProtocolError) -> T {
        guard let value else { throw ProtocolError("\(type): missing \"\(field)\"") }
        return value
    }

    func unknownType() -> ProtocolError { ProtocolError("unknown message type \"\(type)\"") }
    /// A type the other side sends.
    func wrongDirection() -> ProtocolError {
        ProtocolError("unexpected message type \"\(type)\" (the other side sends it)")
    }
}

/// A `notification` message, the most frequent one a device reads: by `NotificationReader` in the form
/// the gateway writes, else decoded without the envelope's other 21 optional fields (7.1 against 9.5 µs
/// a message, a broadcast's notification, `swiftc -O`).
private struct NotificationEnvelope: Decodable {
    var type: String
    var notification: Delivery

    /// How the encoder (sorted keys) begins a notification message; others go through the envelope.
    static let prefix = Array(#"{"notification":{"#.utf8)

    static func read(_ bytes: some Collection<UInt8>) -> Delivery? {
        if let delivery = NotificationReader.read(bytes) { return delivery }
        guard bytes.starts(with: prefix),
            let message = try? decoder.decode(NotificationEnvelope.self, from: Data(bytes)),
            message.type == MessageType.notification.rawValue
        else { return nil }
        return message.notification
    }
}

private let decoder = JSONDecoder()

private let encoder: JSONEncoder = {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return encoder
}()

extension DeviceMessage {
    public static let maximumFrameBytes = 64 * 1024

    /// An `ack`, `complete` or `not_woken` in the encoder's exact form (`PlainMessage`); nil for any
    /// other message or form.
    private static func plain(_ bytes: some Collection<UInt8>) -> DeviceMessage? {
        guard let fields = PlainMessage.fields(bytes), let type = fields.last, type.key == "type" else { return nil }
        switch (MessageType(rawValue: type.value), fields.count) {
        case (.ack, 2) where fields[0].key == "apns_id":
            return .ack(apnsID: fields[0].value)
        case (.complete, 4)
        where fields[0].key == "apns_id" && fields[1].key == "bundle_id" && fields[2].key == "result":
            return .complete(apnsID: fields[0].value, bundleID: fields[1].value, result: fields[2].value)
        case (.notWoken, 4)
        where fields[0].key == "apns_id" && fields[1].key == "bundle_id" && fields[2].key == "reason":
            return .notWoken(apnsID: fields[0].value, bundleID: fields[1].value, reason: fields[2].value)
        default: return nil
        }
    }

    /// The message's bytes without the encoder, where `PlainMessage` writes it (the same bytes).
    private func plainEncoded() -> [UInt8]? {
        switch self {
        case .ack(let id):
            PlainMessage.encode([("apns_id", id), ("type", MessageType.ack.rawValue)])
        case .complete(let id, let bundleID, let result):
            PlainMessage.encode([
                ("apns_id", id), ("bundle_id", bundleID), ("result", result), ("type", MessageType.complete.rawValue),
            ])
        case .notWoken(let id, let bundleID, let reason):
            PlainMessage.encode([
                ("apns_id", id), ("bundle_id", bundleID), ("reason", reason), ("type", MessageType.notWoken.rawValue),
            ])
        default: nil
        }
    }

    public static func decode(_ bytes: some Collection<UInt8>) throws(ProtocolError) -> DeviceMessage {
        if let message = plain(bytes) { return message }
        let envelope = try Envelope.read(bytes, expected: "device message")
        switch MessageType(rawValue: envelope.type) {
        case .register: return .register(enrolment: envelope.enrolment)
        case .hello:
            return .hello(
                deviceID: try envelope.need(envelope.device_id, "device_id"),
                secret: try envelope.need(envelope.secret, "secret"))
        case .install: return .install(bundleID: try envelope.need(envelope.bundle_id, "bundle_id"))
        case .uninstall: return .uninstall(bundleID: try envelope.need(envelope.bundle_id, "bundle_id"))
        case .ack: return .ack(apnsID: try envelope.need(envelope.apns_id, "apns_id"))
        case .complete:
            return .complete(
                apnsID: try envelope.need(envelope.apns_id, "apns_id"),
                bundleID: try envelope.need(envelope.bundle_id, "bundle_id"),
                result: try envelope.need(envelope.result, "result"))
        case .notWoken:
            return .notWoken(
                apnsID: try envelope.need(envelope.apns_id, "apns_id"),
                bundleID: try envelope.need(envelope.bundle_id, "bundle_id"),
                reason: try envelope.need(envelope.reason, "reason"))
        case .keepAlive: return .keepAlive(sequence: try envelope.need(envelope.sequence, "sequence"))
        case .appState:
            return .appState(
                bundleID: try envelope.need(envelope.bundle_id, "bundle_id"),
                state: try envelope.need(envelope.state, "state"))
        case .conditions:
            let others = envelope.other_apps_wakes_per_day ?? 0
            guard others.isFinite, others >= 0 else {
                throw ProtocolError("conditions: other_apps_wakes_per_day must be a number of 0 or more")
            }
            return .conditions(
                lowPowerMode: envelope.low_power_mode ?? false,
                backgroundAppRefreshOff: envelope.background_app_refresh_off ?? false,
                debuggerAttached: envelope.debugger_attached ?? false, otherAppsWakesPerDay: others)
        case .rebooted: return .rebooted
        case .requestActivityToken:
            return .activityToken(
                bundleID: try envelope.need(envelope.bundle_id, "bundle_id"), purpose: try envelope.purpose())
        case .subscribeChannel:
            return .subscribeChannel(
                bundleID: try envelope.need(envelope.bundle_id, "bundle_id"),
                channelID: try envelope.need(envelope.channel_id, "channel_id"))
        case .unsubscribeChannel:
            return .unsubscribeChannel(channelID: try envelope.need(envelope.channel_id, "channel_id"))
        case .frequentPushes:
            return .frequentPushes(
                bundleID: try envelope.need(envelope.bundle_id, "bundle_id"),
                enabled: try envelope.need(envelope.enabled, "enabled"))
        case .none: throw envelope.unknownType()
        default: throw envelope.wrongDirection()
        }
    }

    public func encoded() -> [UInt8] {
        if let bytes = plainEncoded() { return bytes }
        var envelope: Envelope
        switch self {
        case .register(let enrolment):
            envelope = Envelope(type: .register)
            envelope.enrolment = enrolment
        case .hello(let deviceID, let secret):
            envelope = Envelope(type: .hello)
            envelope.device_id = deviceID
            envelope.secret = secret
        case .install(let bundleID):
            envelope = Envelope(type: .install)
            envelope.bundle_id = bundleID
        case .uninstall(let bundleID):
            envelope = Envelope(type: .uninstall)
            envelope.bundle_id = bundleID
        case .ack(let apnsID):
            envelope = Envelope(type: .ack)
            envelope.apns_id = apnsID
        case .complete(let apnsID, let bundleID, let result):
            envelope = Envelope(type: .complete)
            envelope.apns_id = apnsID
            envelope.bundle_id = bundleID
            envelope.result = result
        case .notWoken(let apnsID, let bundleID, let reason):
            envelope = Envelope(type: .notWoken)
            envelope.apns_id = apnsID
            envelope.bundle_id = bundleID
            envelope.reason = reason
        case .keepAlive(let sequence):
            envelope = Envelope(type: .keepAlive)
            envelope.sequence = sequence
        case .appState(let bundleID, let state):
            envelope = Envelope(type: .appState)
            envelope.bundle_id = bundleID
            envelope.state = state
        case .rebooted:
            envelope = Envelope(type: .rebooted)
        case .conditions(let lowPowerMode, let backgroundAppRefreshOff, let debuggerAttached, let others):
            envelope = Envelope(type: .conditions)
            envelope.low_power_mode = lowPowerMode
            if debuggerAttached { envelope.debugger_attached = true }
            if others > 0 { envelope.other_apps_wakes_per_day = others }
            envelope.background_app_refresh_off = backgroundAppRefreshOff
        case .activityToken(let bundleID, let purpose):
            envelope = Envelope(type: .requestActivityToken)
            envelope.bundle_id = bundleID
            envelope.set(purpose)
        case .subscribeChannel(let bundleID, let channelID):
            envelope = Envelope(type: .subscribeChannel)
            envelope.bundle_id = bundleID
            envelope.channel_id = channelID
        case .unsubscribeChannel(let channelID):
            envelope = Envelope(type: .unsubscribeChannel)
            envelope.channel_id = channelID
        case .frequentPushes(let bundleID, let enabled):
            envelope = Envelope(type: .frequentPushes)
            envelope.bundle_id = bundleID
            envelope.enabled = enabled
        }
        return Array((try? encoder.encode(envelope)) ?? Data())
    }
}

extension GatewayMessage {
    public static func decode(_ bytes: some Collection<UInt8>) throws(ProtocolError) -> GatewayMessage {
        if let delivery = NotificationEnvelope.read(bytes) { return .notification(delivery) }
        let envelope = try Envelope.read(bytes, expected: "gateway message")
        switch MessageType(rawValue: envelope.type) {
        case .registered:
            return .registered(
                deviceID: try envelope.need(envelope.device_id, "device_id"),
                secret: try envelope.need(envelope.secret, "secret"))
        case .welcome:
            return .welcome(
                deviceID: try envelope.need(envelope.device_id, "device_id"), apps: envelope.apps ?? [],
                keepAliveSeconds: try envelope.need(envelope.keep_alive_seconds, "keep_alive_seconds"))
        case .installed:
            return .installed(
                InstalledApp(
                    bundleID: try envelope.need(envelope.bundle_id, "bundle_id"),
                    token: try envelope.need(envelope.token, "token")))
        case .uninstalled: return .uninstalled(bundleID: try envelope.need(envelope.bundle_id, "bundle_id"))
        case .notification: return .notification(try envelope.need(envelope.notification, "notification"))
        case .keepAliveAck:
            return .keepAliveAck(
                sequence: try envelope.need(envelope.sequence, "sequence"), notifications: envelope.notifications ?? [])
        case .closing:
            return .closing(
                reason: try envelope.need(envelope.reason, "reason"),
                reconnectAfterMilliseconds: envelope.reconnect_after_ms)
        case .error: return .error(message: try envelope.need(envelope.message, "message"))
        case .activityToken:
            return .activityToken(
                bundleID: try envelope.need(envelope.bundle_id, "bundle_id"), purpose: try envelope.purpose(),
                token: try envelope.need(envelope.token, "token"))
        case .channelSubscribed:
            return .channelSubscribed(
                bundleID: try envelope.need(envelope.bundle_id, "bundle_id"),
                channelID: try envelope.need(envelope.channel_id, "channel_id"))
        case .none: throw envelope.unknownType()
        default: throw envelope.wrongDirection()
        }
    }

    public func encoded() -> [UInt8] {
        if case .notification(let delivery) = self { return NotificationWriter.encode(delivery) }
        var envelope: Envelope
        switch self {
        case .registered(let deviceID, let secret):
            envelope = Envelope(type: .registered)
            envelope.device_id = deviceID
            envelope.secret = secret
        case .welcome(let deviceID, let apps, let keepAliveSeconds):
            envelope = Envelope(type: .welcome)
            envelope.device_id = deviceID
            envelope.apps = apps
            envelope.keep_alive_seconds = keepAliveSeconds
        case .installed(let app):
            envelope = Envelope(type: .installed)
            envelope.bundle_id = app.bundleID
            envelope.token = app.token
        case .uninstalled(let bundleID):
            envelope = Envelope(type: .uninstalled)
            envelope.bundle_id = bundleID
        case .notification(let delivery):
            envelope = Envelope(type: .notification)
            envelope.notification = delivery
        case .keepAliveAck(let sequence, let notifications):
            envelope = Envelope(type: .keepAliveAck)
            envelope.sequence = sequence
            envelope.notifications = notifications
        case .closing(let reason, let reconnectAfter):
            envelope = Envelope(type: .closing)
            envelope.reason = reason
            envelope.reconnect_after_ms = reconnectAfter
        case .error(let message):
            envelope = Envelope(type: .error)
            envelope.message = message
        case .activityToken(let bundleID, let purpose, let token):
            envelope = Envelope(type: .activityToken)
            envelope.bundle_id = bundleID
            envelope.set(purpose)
            envelope.token = token
        case .channelSubscribed(let bundleID, let channelID):
            envelope = Envelope(type: .channelSubscribed)
            envelope.bundle_id = bundleID
            envelope.channel_id = channelID
        }
        return Array((try? encoder.encode(envelope)) ?? Data())
    }
}
