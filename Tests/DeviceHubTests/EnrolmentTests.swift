import DeviceAgent
import ProviderClient
import PushModel
import TestSupport
import Testing

@testable import DeviceHub

/// Who may become a device (the enrolment secret, a rate per address) and how devices stop being ones
/// (removal, pruning), over real WebSockets.
@Suite struct EnrolmentTests {
    static let alert = #"{"aps":{"alert":"hi"}}"#

    func register(_ harness: HubHarness, enrolment: String?) async throws -> [String] {
        let text = enrolment.map { #"{"type":"register","enrolment":"\#($0)"}"# } ?? #"{"type":"register"}"#
        return try await RawWebSocket.exchangeUntil(
            host: "127.0.0.1", port: harness.devicePort, text: text, group: harness.group
        ) { $0.contains("registered") || $0.contains("closing") }
    }

    @Test func registeringNeedsTheFleetsEnrolmentSecret() async throws {
        var settings = HubSettings()
        settings.enrolmentSecret = "fleet-secret"
        let harness = try await HubHarness(hubSettings: settings)
        let missing = try await register(harness, enrolment: nil)
        #expect(missing.last?.contains(#""reason":"auth_failed""#) == true, "\(missing)")
        let wrong = try await register(harness, enrolment: "guess")
        #expect(wrong.last?.contains(#""reason":"auth_failed""#) == true, "\(wrong)")
        let right = try await register(harness, enrolment: "fleet-secret")
        #expect(right.last?.contains(#""type":"registered""#) == true, "\(right)")
        #expect(harness.hub.registry.deviceCount == 1)
        #expect(harness.hub.counters.enrolmentsRefused == 2)
        // An agent given the secret enrols and installs.
        let (agent, _) = try await harness.installedAgent(log: EventLog())
        agent.stop()
        try await harness.stop()
    }

    @Test func registrationsPerAddressAreLimited() async throws {
        var settings = HubSettings()
        settings.enrolmentsPerAddress = RateLimit(burst: 3, perSecond: 1.0 / 60)
        settings.enrolmentLimitSparesLoopback = false
        let harness = try await HubHarness(hubSettings: settings)
        var answers: [String] = []
        for _ in 0..<5 { answers.append(try await register(harness, enrolment: nil).last ?? "") }
        #expect(answers.filter { $0.contains(#""type":"registered""#) }.count == 3, "\(answers)")
        #expect(answers.suffix(2).allSatisfy { $0.contains(#""reason":"enrolment_limited""#) }, "\(answers)")
        // The rate refills with the (manual) clock.
        harness.clock.advance(seconds: 60)
        #expect(try await register(harness, enrolment: nil).last?.contains("registered") == true)
        try await harness.stop()
    }

    @Test func aRemovedDeviceIsClosedCannotComeBackAndItsTokenAnswers410() async throws {
        let harness = try await HubHarness()
        let log = EventLog()
        let (agent, token) = try await harness.installedAgent(log: log)
        let identity = try #require(agent.identity)
        let removedAt = harness.clock.now
        #expect(harness.hub.remove(deviceID: identity.deviceID))
        #expect(!harness.hub.remove(deviceID: identity.deviceID), "removed once")
        try await eventually("the device was told") { log.all.contains(.closing(reason: "removed")) }
        agent.stop()
        let answer = try await harness.post(token: token, payload: Self.alert)
        #expect(answer.status == 410)
        #expect(String(decoding: answer.body, as: UTF8.self).contains(#""timestamp":\#(removedAt.milliseconds)"#))
        // Its identity no longer says hello.
        let hello = try await RawWebSocket.exchangeUntil(
            host: "127.0.0.1", port: harness.devicePort,
            text: #"{"type":"hello","device_id":"\#(identity.deviceID)","secret":"\#(identity.secret)"}"#,
            group: harness.group
        ) { $0.contains("closing") || $0.contains("welcome") }
        #expect(hello.last?.contains(#""reason":"auth_failed""#) == true, "\(hello)")
        #expect(harness.hub.counters.devicesRemoved == 1)
        try await harness.stop()
    }

    @Test func devicesNotSeenForThePruneTimeAreRemovedConnectedOnesKept() async throws {
        var settings = HubSettings()
        settings.pruneAfterSeconds = 3600
        let harness = try await HubHarness(hubSettings: settings)
        let log = EventLog()
        let (gone, goneToken) = try await harness.installedAgent(log: log)
        let (stays, staysToken) = try await harness.installedAgent(log: EventLog())
        gone.stop()
        try await eventually("the first device disconnected") {
            !harness.hub.isConnected(harness.hub.registry.slot(ofDevice: gone.identity!.deviceID)!)
        }
        #expect(harness.hub.pruneStaleDevices() == 0, "not yet")
        harness.clock.advance(seconds: 3601)
        #expect(harness.hub.pruneStaleDevices() == 1)
        #expect(try await harness.post(token: goneToken, payload: Self.alert).status == 410)
        #expect(try await harness.post(token: staysToken, payload: Self.alert).status == 200)
        #expect(harness.hub.counters.devicesPruned == 1)
        stays.stop()
        try await harness.stop()
    }
}
