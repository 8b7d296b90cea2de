import NIOCore
import PushModel
import Synchronization

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

/// Accepts everything and counts it by class: the intake until the device hub lands.
public final class CountingIntake: NotificationIntake {
    private let counts = Mutex([NotificationClass: Int]())

    public init() {}

    public func submit(_ notification: PushNotification, on eventLoop: any EventLoop) -> IntakeReply {
        counts.withLock { $0[notification.notificationClass, default: 0] += 1 }
        return .now(.accepted)
    }

    public var accepted: [NotificationClass: Int] { counts.withLock { $0 } }
}
