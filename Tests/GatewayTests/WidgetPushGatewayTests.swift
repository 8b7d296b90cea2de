import DeviceAgent
import DeviceHub
import DeviceProtocol
import Foundation
import Gateway
import PushModel
import PushPolicy
import ProviderClient
import TestSupport
import Testing

/// Widget and control pushes through a real gateway (issue 51), over h2c and TLS: accepted as APNs does
/// (a payload without `content-changed` too, recorded as a mismatch), delivered within the app's daily
/// reload budget (`reload_on_budget`), and past it held with their reason, the newest only.
extension BroadcastGatewayTests {
    @Test(arguments: Transport.allCases) func widgetPushesReloadWithinTheirDailyBudget(over transport: Transport)
        async throws
    {
        try await withHarness(settings: ["policy.widgets.daily_budget=2"], transport: transport) { harness in
            let received = Received()
            let agent = harness.agent(0, received)
            agent.start()
            defer { agent.stop() }
            try await eventually("installed") { agent.tokens[Self.bundle] != nil }
            let token = try #require(agent.tokens[Self.bundle])
            func push(_ type: String, _ body: String) async throws -> (status: Int, id: String?) {
                let response = try await harness.client.post(
                    path: "/3/device/\(token)",
                    headers: [
                        ("authorization", harness.authorization), ("apns-topic", "\(Self.bundle).push-type.\(type)"),
                        ("apns-push-type", type),
                    ], body: Array(body.utf8))
                return (response.status, response.header("apns-id"))
            }
            let changed = #"{"aps":{"content-changed":true}}"#
            for _ in 0..<2 { #expect(try await push("widgets", changed).status == 200) }
            try await eventually("two reloads delivered") { received.of(0).count == 2 }
            #expect(received.of(0).map(\.rule) == ["reload_on_budget", "reload_on_budget"])
            #expect(received.of(0).allSatisfy { $0.pushType == "widgets" })
            // Past the budget: held, the newest only.
            let hub = harness.gateway.services.hub
            for _ in 0..<2 { #expect(try await push("widgets", changed).status == 200) }
            try await eventually("held past the budget") { hub.policyCounters.heldBy[.reloadBudget] == 2 }
            #expect(hub.policyCounters.coalesced == 1)
            // Controls have no budget (Apple documents none): at once.
            #expect(try await push("controls", changed).status == 200)
            try await eventually("the control push delivered") { received.of(0).count == 3 }
            #expect(received.of(0).last?.rule == "immediate")
            // Without content-changed: accepted, and the journey says why the system has nothing to do.
            let bare = try await push("controls", #"{"aps":{}}"#)
            #expect(bare.status == 200)
            let id = try #require(bare.id.flatMap(APNsID.init(header:)))
            try await eventually("the mismatch recorded") {
                hub.journey(of: id).contains { $0.event == .pushTypeMismatch(.withoutContentChanged) }
            }
        }
    }
}
