/// Why the gateway closes a device's connection: the `closing` message's reason, and the WebSocket close
/// code that follows it (RFC 6455 §7.4.1). One table: docs/device-protocol.md lists the same.
public enum ClosingReason: String, CaseIterable, Sendable {
    /// The gateway is shutting down (with a reconnect hint).
    case shutdown
    /// A wrong device secret to `hello`, or a wrong enrolment secret to `register` (final).
    case authFailed = "auth_failed"
    /// A message the protocol does not allow (an `error` message says which).
    case protocolError = "protocol_error"
    /// A text frame that is not UTF-8.
    case invalidUTF8 = "invalid_utf8"
    /// More messages than `devices.messages_per_second` allows.
    case flooding
    /// The device did not read what was written to it.
    case notReading = "not_reading"
    /// The device connected again: this connection is the older one.
    case replaced
    /// Another node runs the device now.
    case moved
    /// Too many registrations from the device's address (final).
    case enrolmentLimited = "enrolment_limited"
    /// The device was removed through the admin API.
    case removed
    /// The gateway could not store what the connection needs (its claim on the device, or a change the
    /// device asked for): the device reconnects after the hint.
    case storeUnavailable = "store_unavailable"

    /// The close frame's code.
    public var closeCode: UInt16 {
        switch self {
        case .shutdown, .replaced, .moved: 1001  // going away
        case .invalidUTF8: 1007  // data inconsistent with the message type (§8.1)
        case .protocolError: 1002
        case .storeUnavailable: 1011  // the server met a condition it could not help
        case .authFailed, .flooding, .notReading, .enrolmentLimited, .removed: 1008  // policy violation
        }
    }

    /// Whether no reconnection changes the answer, so the agent stops: a wrong enrolment secret (an
    /// `auth_failed` to `register`), too many enrolments. An `auth_failed` to `hello` is not: the device
    /// registers again.
    public func isFinal(registering: Bool) -> Bool {
        self == .enrolmentLimited || (self == .authFailed && registering)
    }
}
