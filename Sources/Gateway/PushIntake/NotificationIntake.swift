import NIOCore
import PushModel

/// Where accepted notifications go: the device hub, the throttle and the store plug in here.
/// `submit` is called on the connection's event loop; answering `.now` keeps the hot path free of
/// future allocations, `.later` lets a durable store answer after its commit.
public protocol NotificationIntake: Sendable {
    func submit(_ notification: PushNotification, on eventLoop: any EventLoop) -> IntakeReply
}

public enum IntakeReply: Sendable {
    case now(IntakeResult)
    case later(EventLoopFuture<IntakeResult>)
    /// Accepted once the future succeeds (the store's commit); its failure answers 500. Saves the
    /// mapped future `.later` would need on the durable path.
    case afterCommit(EventLoopFuture<Void>)
}

public enum IntakeResult: Sendable, Equatable {
    case accepted
    case rejected(Rejection)
}
