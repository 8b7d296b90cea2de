import DeviceProtocol
import PushModel
import PushPolicy

/// A connected device as the hub reaches it, from any thread: the deliveries the core lets through, in
/// order, and the end of the connection. It names no wire message: a connection's session encodes each
/// delivery in the device protocol (`ChannelSession`); an embedded one (the tests) keeps them.
public protocol DeviceSession: AnyObject, Sendable {
    /// Writes one delivery. `shared`: what the sessions written to in one write-out share — a
    /// broadcast's delivery is the same for every subscriber, encoded once.
    func write(_ item: Outgoing, shared: inout SharedEncodings)
    /// Says why (`reason`), with a reconnect hint when given, and closes the connection.
    func close(_ reason: ClosingReason, reconnectAfterMilliseconds: Int?)
    /// Whether the session has ended. Set before the hub hears `disconnected`, so that a session that
    /// ends while its device is being claimed is never installed afterwards (the hub reads it under its
    /// lock when it installs the session).
    var hasEnded: Bool { get }
}

/// Encodings kept for one write-out, reused by every session written to in it: a broadcast's delivery,
/// by its id and rule. Opaque to the hub.
public struct SharedEncodings {
    struct Key: Hashable {
        var id: APNsID
        var rule: Rule
    }
    var broadcasts: [Key: [UInt8]] = [:]

    public init() {}
}
