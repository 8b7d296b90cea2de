import AdminAPI
import DeviceAgent
import Foundation
import Gateway
import PushModel
import TestSupport
import Testing

/// Lookups on a real gateway: a silent push held over budget and released on a keep-alive shows that
/// journey, with the store's record; the device shows its app's spent budget; both read as tables.
@Suite(.timeLimit(.minutes(5))) struct LookupTests {
    static let topic = "com.example.lookup"

    @Test func aHeldPushReleasedOnAKeepAliveShowsItsJourney() async throws {
        try await GatewayWithDevice.run(
            topic: Self.topic, settings: ["policy.budget.capacity=1", "devices.keep_alive_seconds=1"]
        ) { setup in
            let held = "0a9f4c1e-7b2d-4e8f-9a3c-5d6e7f8a9b0c"
            #expect(try await setup.post(silent: true) == 200)
            #expect(try await setup.post(silent: true, id: held) == 200)

            var journey: [String: Any] = [:]
            try await eventually("the held push was released on a keep-alive, acknowledged and completed") {
                let (status, body) = try await setup.admin("/v1/notifications/\(held)")
                guard status == 200 else { return false }
                journey = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] ?? [:]
                let stored = journey["stored"] as? [String: Any]
                let steps = journey["steps"] as? [[String: Any]] ?? []
                return stored?["state"] as? String == "delivered"
                    && steps.contains { $0["event"] as? String == "completed newData" }
            }
            let steps = (journey["steps"] as? [[String: Any]] ?? []).map {
                "\($0["event"] as? String ?? "?") \($0["rule"] as? String ?? "-")"
            }
            #expect(
                steps == [
                    "accepted silent -", "held held_over_budget", "woken released_piggyback_keep_alive",
                    "acknowledged by the device -", "completed newData -",
                ])
            // Apple's delivery states, step by step and now.
            #expect(
                (journey["steps"] as? [[String: Any]] ?? []).map { $0["state"] as? String ?? "?" } == [
                    "Received", "Stored – Power Considerations", "Received", "Delivered (From Storage)",
                    "Delivered (From Storage)",
                ])
            #expect(journey["deliveryState"] as? String == "Delivered (From Storage)")
            // The apns-unique-id the 200 carried leads to the same journey.
            let unique = try #require(journey["uniqueID"] as? String)
            #expect(unique == APNsID(header: held)!.uniqueID.value)
            let (uniqueStatus, uniqueBody) = try await setup.admin("/v1/notifications/\(unique)")
            #expect(uniqueStatus == 200)
            let byUnique = try JSONSerialization.jsonObject(with: Data(uniqueBody.utf8)) as? [String: Any]
            #expect(byUnique?["apnsID"] as? String == held)
            let stored = journey["stored"] as? [String: Any]
            #expect(stored?["rule"] as? String == "released_piggyback_keep_alive")
            #expect(stored?["pushType"] as? String == "background")

            let table = try #require(
                AdminTables.render(
                    resource: "notifications", json: try await setup.admin("/v1/notifications/\(held)").body)
            )
            #expect(table.contains("held_over_budget"))
            #expect(table.contains("released_piggyback_keep_alive"))
            #expect(table.contains("delivered (released_piggyback_keep_alive)"))
            #expect(table.contains(": Delivered (From Storage)"))
            #expect(table.contains("Stored – Power Considerations"))

            // The device: its app's budget is spent.
            let device = try #require(setup.agent.identity?.deviceID)
            let (status, body) = try await setup.admin("/v1/devices/\(device)")
            #expect(status == 200)
            let state = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
            #expect(state?["connected"] as? Bool == true)
            let apps = state?["apps"] as? [[String: Any]] ?? []
            #expect(apps.first?["bundleID"] as? String == Self.topic)
            #expect(apps.first?["token"] as? String == setup.token)
            #expect((apps.first?["budget"] as? [String: Any])?["budgetLeft"] as? Int == 0)
            let deviceTable = try #require(AdminTables.render(resource: "devices", json: body))
            #expect(deviceTable.contains("0 of 1"))
            #expect(try await setup.admin("/v1/devices/no-such-device").status == 404)
            #expect(try await setup.admin("/v1/notifications/0a9f4c1e-0000-4e8f-9a3c-5d6e7f8a9b0c").status == 404)

        }
    }
}
