import AdminAPI
import DeviceAgent
import DeviceProtocol
import Foundation
import ProviderClient
import PushPolicy
import Testing
import TestSupport

/// The Live Activity budget on a real gateway: priority-10 updates within the activity's budget are
/// delivered at once, the one over it is answered 200 and held, then rides the device's next keep-alive;
/// the journey and the counters say which was which.
@Suite(.timeLimit(.minutes(5))) struct LiveActivityBudgetGatewayTests {
    static let topic = "com.example.scores"

    @Test func anUpdateOverBudgetIsHeldAndDeliveredWithTheNextKeepAlive() async throws {
        try await GatewayWithDevice.run(
            topic: Self.topic,
            settings: ["policy.live_activity.budget.capacity=2", "devices.keep_alive_seconds=1"]
        ) { setup in
            let ids = [
                "6a1b2c3d-0000-4e8f-9a3c-000000000001", "6a1b2c3d-0000-4e8f-9a3c-000000000002",
                "6a1b2c3d-0000-4e8f-9a3c-000000000003",
            ]
            for (index, id) in ids.enumerated() {
                let body =
                    #"{"aps":{"timestamp":\#(1_800_000_000 + index),"event":"update","content-state":{"home":\#(index)}}}"#
                let response = try await setup.client.post(
                    path: "/3/device/\(setup.token)",
                    headers: [
                        ("authorization", setup.authorization), ("apns-topic", Self.topic + ".push-type.liveactivity"),
                        ("apns-push-type", "liveactivity"), ("apns-priority", "10"), ("apns-id", id),
                    ], body: Array(body.utf8))
                #expect(response.status == 200)
            }
            func steps(_ id: String) async throws -> [String] {
                let (status, body) = try await setup.admin("/v1/notifications/\(id)")
                guard status == 200 else { return [] }
                let journey = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] ?? [:]
                return (journey["steps"] as? [[String: Any]] ?? []).map {
                    "\($0["event"] as? String ?? "?") \($0["rule"] as? String ?? "-")"
                }
            }
            try await eventually("every update acknowledged by the device") {
                for id in ids where !(try await steps(id)).contains("acknowledged by the device -") { return false }
                return true
            }
            #expect(try await steps(ids[0]).contains("delivered live_activity_on_budget"))
            #expect(try await steps(ids[1]).contains("delivered live_activity_on_budget"))
            let third = try await steps(ids[2])
            #expect(third.contains("held held_live_activity_over_budget"), "\(third)")
            #expect(third.contains("delivered released_piggyback_keep_alive"), "\(third)")

            let policy = try await setup.counters().policy
            #expect(policy.liveActivityOnBudget == 2)
            #expect(policy.liveActivityOverBudget == 1)
        }
    }

    /// A device whose app has frequent pushes (`frequent_pushes`) gets the larger budget: three updates
    /// at once where the usual budget allows two; the device's state says so.
    @Test func frequentPushesRaiseTheBudget() async throws {
        try await GatewayWithDevice.run(
            topic: Self.topic,
            settings: [
                "policy.live_activity.budget.capacity=2", "policy.live_activity.frequent_budget.capacity=3",
                "devices.keep_alive_seconds=600",
            ]
        ) { setup in
            let deviceID = try #require(setup.agent.identity?.deviceID)
            setup.agent.send(.frequentPushes(bundleID: Self.topic, enabled: true))
            try await eventually("the gateway knows the app has frequent pushes") {
                let (status, body) = try await setup.admin("/v1/devices/\(deviceID)")
                guard status == 200 else { return false }
                let device = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
                let apps = device?["apps"] as? [[String: Any]] ?? []
                return apps.contains { ($0["budget"] as? [String: Any])?["frequentPushes"] as? Bool == true }
            }
            for index in 0..<3 {
                let body = #"{"aps":{"timestamp":\#(1_800_000_000 + index),"event":"update","content-state":{}}}"#
                let response = try await setup.client.post(
                    path: "/3/device/\(setup.token)",
                    headers: [
                        ("authorization", setup.authorization), ("apns-topic", Self.topic + ".push-type.liveactivity"),
                        ("apns-push-type", "liveactivity"), ("apns-priority", "10"),
                    ], body: Array(body.utf8))
                #expect(response.status == 200)
            }
            try await eventually("three updates on budget") {
                try await setup.counters().policy.liveActivityOnBudget == 3
            }
            #expect(try await setup.counters().policy.liveActivityOverBudget == 0)
        }
    }
}
