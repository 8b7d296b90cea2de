import Foundation
import Logging
import NIOCore
import NIOPosix
import ProviderAuth
import ProviderClient
import PushIntake
import PushModel
import Synchronization
import TestSupport
import Testing

@testable import ProviderAPI

/// Holds every submission until the test releases it: a store that has not committed yet.
final class HoldingIntake: NotificationIntake {
    let pending = Mutex<[EventLoopPromise<IntakeResult>]>([])

    func submit(_ notification: PushNotification, on eventLoop: any EventLoop) -> IntakeReply {
        let promise = eventLoop.makePromise(of: IntakeResult.self)
        pending.withLock { $0.append(promise) }
        return .later(promise.futureResult)
    }

    func releaseAll() {
        for promise in pending.withLock({ $0 }) { promise.succeed(.accepted) }
    }

    var count: Int { pending.withLock { $0.count } }
}

@Suite struct ShutdownTests {
    /// Graceful shutdown: the listener stops accepting, the open connection gets GOAWAY, the request
    /// in flight is still answered 200, and then the connection closes.
    @Test func inFlightRequestsFinishBeforeConnectionsClose() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let intake = HoldingIntake()
        let clock = ManualClock()
        var settings = ProviderSettings()
        settings.perDeviceTokenRate = .unlimited
        let context = ProviderContext(
            settings: settings, keys: Fixture.keys, directory: Fixture.directory, intake: intake, clock: { clock.now })
        let server = ProviderServer(
            context: context, listeners: [ProviderListener(host: "127.0.0.1", port: 0, security: .cleartext)],
            group: group, logger: Logger(label: "test"), gracePeriod: .seconds(30))
        try await server.start()
        let port = try #require(server.boundAddresses.first?.port)
        let client = try await ProviderClient.connect(host: "127.0.0.1", port: port, security: .cleartext, group: group)
        let headers = [
            ("authorization", "bearer " + (try Fixture.main.token(issuedAt: clock.now))),
            ("apns-topic", Fixture.bundle),
        ]
        let inFlight = Task {
            try await client.post(path: "/3/device/\(Fixture.token.hex)", headers: headers, body: alertPayload)
        }
        try await waitUntil { intake.count == 1 }

        let shutdown = Task { try await server.shutdown() }
        try await waitUntil { context.isDraining }
        // New connections are refused once the listener is closed.
        try await waitUntil {
            (try? await ProviderClient.connect(host: "127.0.0.1", port: port, security: .cleartext, group: group))
                == nil
        }
        #expect(client.channel.isActive, "the connection stays open for its request in flight")
        intake.releaseAll()
        #expect(try await inFlight.value.status == 200)
        try await shutdown.value
        try await client.channel.closeFuture.get()
        try await group.shutdownGracefully()
    }

    /// Polls a condition, bounded: no fixed sleeps.
    func waitUntil(_ condition: () async -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !(await condition()) {
            guard ContinuousClock.now < deadline else {
                Issue.record("condition not met in time")
                return
            }
            await Task.yield()
        }
    }
}
