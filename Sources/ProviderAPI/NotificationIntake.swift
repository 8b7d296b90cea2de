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
}

public enum IntakeResult: Sendable, Equatable {
    case accepted
    case rejected(Rejection)
}
