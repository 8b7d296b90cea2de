import NIOCore
import PushModel

/// A broadcast the provider API accepted (`POST /4/broadcasts/apps/<bundle>`), in typed values.
public struct BroadcastSubmission: Sendable {
    public var id: APNsID
    public var channel: BroadcastChannel
    public var priority: Priority
    public var expiration: Expiration
    public var payload: [UInt8]
    public var teamID: String?

    public init(
        id: APNsID, channel: BroadcastChannel, priority: Priority, expiration: Expiration, payload: [UInt8],
        teamID: String?
    ) {
        self.id = id
        self.channel = channel
        self.priority = priority
        self.expiration = expiration
        self.payload = payload
        self.teamID = teamID
    }
}

/// Where accepted broadcasts go (the device hub): answered once stored, then fanned out to the
/// channel's subscribers. Called on the connection's event loop.
public protocol BroadcastIntake: Sendable {
    func broadcast(_ submission: BroadcastSubmission, on eventLoop: any EventLoop) -> IntakeReply
}
