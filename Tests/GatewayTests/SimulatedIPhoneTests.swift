import AdminAPI
import AsyncHTTPClient
import ContentOrigin
import DeviceAgent
import DeviceHub
import DeviceRuntime
import Foundation
import Gateway
import Logging
import NIOCore
import NIOPosix
import ProviderAuth
import ProviderClient
import PushModel
import PushPolicy
import Synchronization
import TestSupport
import Testing
import WallClock

/// A simulated iPhone end to end over loopback: a real gateway, a device agent running iOS's background
/// rules (`DeviceRuntime` in its `RuntimeShell`), and a content server it fetches from over real HTTP.
@Suite(.timeLimit(.minutes(5))) struct SimulatedIPhoneTests {
    final class Recorded: Sendable {
        let actions = Mutex<[RuntimeAction]>([])
        func contains(_ test: (RuntimeAction) -> Bool) -> Bool { actions.withLock { $0.contains(where: test) } }
        func count(_ test: (RuntimeAction) -> Bool) -> Int { actions.withLock { $0.filter(test).count } }
    }

    @Test func aWakeDownloadsInTheBackgroundThroughATerminationAndAForceQuitCancels() async throws {
        let topic = "com.example.news"
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        var originSettings = OriginServer.Settings()
        originSettings.itemBytes = 256 * 1024
        originSettings.linkBytesPerSecond = 512 * 1024  // a background session's quarter: ~2 s per item
        let origin = OriginServer(settings: originSettings, group: group, clock: UnixTime.now)
        try await origin.start()
        try await LocalGateway.run(
            topic: topic, settings: ["log.level=error"], group: group, logger: Logger(label: "test")
        ) { gateway in
            let http = HTTPClient(eventLoopGroupProvider: .shared(group))
            // iOS 17, with discretionary transfers started at once (their delay is a model figure; not waited for here).
            var profile = IOSProfile.ios17
            profile.discretionaryDelaySeconds = 0
            let recorded = Recorded()
            let shell = RuntimeShell(
                settings: .init(
                    profile: profile, apps: [(topic, AppBehaviour())], origin: "http://127.0.0.1:\(origin.boundPort!)",
                    seed: 1),
                loop: group.next(), http: http, clock: UnixTime.now
            ) { action, _ in recorded.actions.withLock { $0.append(action) } }
            let agent = DeviceAgent(
                host: "127.0.0.1", port: gateway.devicePort, apps: [topic],
                enrolment: gateway.services.hub.settings.enrolmentSecret, runtime: shell, group: group)
            agent.start()
            try await eventually("the device installed the app") { agent.tokens[topic] != nil }
            let token = try #require(agent.tokens[topic])
            let client = try await ProviderClient.connect(
                host: "127.0.0.1", port: gateway.providerPort, security: .cleartext, group: group)
            let authorization = "bearer " + (try gateway.signer.token(issuedAt: UnixTime.now()))
            func postSilent(_ id: String) async throws -> Int {
                try await client.post(
                    path: "/3/device/\(token)",
                    headers: [
                        ("authorization", authorization), ("apns-topic", topic), ("apns-push-type", "background"),
                        ("apns-priority", "5"), ("apns-id", id),
                    ], body: Array(#"{"aps":{"content-available":1}}"#.utf8)
                ).status
            }
            func state() async throws -> AppState? { try await shell.state(of: topic).get()?.state }

            // 1. A silent push wakes the app: manifest, then the item in a background session; the handler
            //    is called in time (the gateway records the completion). The origin holds the item (a stalled
            //    server) from the start until the app has been reclaimed: the download cannot end before the
            //    memory pressure, however slow the machine (it could end during the waits below).
            origin.holdItems(true)
            origin.publish()
            let first = "5e0e3c3a-0000-4000-8000-000000000001"
            let firstID = try #require(APNsID(header: first))
            let app: AppSlot = 0  // the device's one app, `topic`
            #expect(try await postSilent(first) == 200)
            try await eventually("the app completed its wake with newData") {
                recorded.contains { $0 == .complete(apnsID: firstID, app: app, result: .newData) }
            }
            try await eventually("the gateway saw the completion") {
                let journey = try await AdminClient.get(
                    host: "127.0.0.1", port: gateway.adminPort, path: "/v1/notifications/\(first)", token: nil)
                return journey.body.contains("completed")
            }
            try await eventually("the item download runs in a background session") {
                recorded.contains {
                    if case .startTransfer(let request) = $0 { request.content == .item(version: 1) } else { false }
                }
            }
            try await eventually("the app is suspended") { try await state() == .suspended }

            // 2. The system reclaims the app while the download runs; the download goes on, and when it
            //    finishes the app is relaunched in the background and calls the session's handler.
            #expect(!recorded.contains { $0 == .relaunched(app: app) })
            shell.handle(.memoryPressure(app: app))
            try await eventually("terminated by the system") { try await state() == .notRunning }
            origin.holdItems(false)
            try await eventually("relaunched with the content") {
                recorded.contains { $0 == .relaunched(app: app) }
                    && recorded.contains {
                        $0 == .contentUpdated(app: app, version: 1, by: .silentPush(apnsID: firstID))
                    }
            }
            try await eventually("the session's handler was called: suspended again") {
                try await state() == .suspended
            }
            #expect(
                !recorded.contains {
                    if case .terminated(_, let cause) = $0 { cause != .memoryPressure } else { false }
                })

            // 3. A second version: the wake starts its download, and a force-quit cancels it. The origin
            //    holds the item until then, so the download cannot end whole before the cancel.
            origin.holdItems(true)
            origin.publish()
            let second = "5e0e3c3a-0000-4000-8000-000000000002"
            #expect(try await postSilent(second) == 200)
            try await eventually("the second download started") {
                recorded.contains {
                    if case .startTransfer(let request) = $0 { request.content == .item(version: 2) } else { false }
                }
            }
            shell.handle(.userForceQuit(app: app))
            try await eventually("force-quit") { try await state() == .forceQuit }
            #expect(recorded.contains { if case .cancelTransfer = $0 { true } else { false } })
            // Whether the request reached the origin before the cancel or not, every request the origin saw
            // ends (logged whole or cut short), and none for the second item ended whole.
            try await eventually("every request at the origin has ended") { origin.log.inFlight == 0 }
            origin.holdItems(false)
            #expect(!origin.log.all.contains { $0.path.hasPrefix("/items/2") && $0.bytes >= originSettings.itemBytes })
            #expect(try await shell.state(of: topic).get()?.contentVersion == 1)
            let deviceID = try #require(agent.identity?.deviceID)
            #expect(origin.log.all.allSatisfy { $0.device == deviceID })

            await client.close()
            agent.stop()
            try await http.shutdown()
        }
        await origin.stop()
        try await group.shutdownGracefully()
    }
}
