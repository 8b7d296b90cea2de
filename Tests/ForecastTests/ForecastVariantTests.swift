import DeviceRuntime
import PushModel
import PushPolicy
import Testing

@testable import Forecast

/// The what-if language of `--compare`, `--search` and `--assume`, and whose freshness ranks the variants,
/// without the CLI: the gateway's own keys go to the closure the command hands in.
@Suite struct ForecastVariantTests {
    static let base = ForecastScenario(
        kinds: [ForecastTests.kind("news"), ForecastTests.kind("chat", announce: .alert)],
        start: ForecastTests.midnight,
        hours: 1, publications: PublicationSchedule(everySeconds: 600))

    /// The gateway's key table as the command hands it in: one key understood, anything else refused.
    static func gateway(_ settings: [String]) throws -> (policy: PolicySettings, keepAliveSeconds: Int) {
        var policy = PolicySettings()
        for setting in settings {
            guard setting.hasPrefix("policy.budget.capacity="), let value = Int(setting.split(separator: "=")[1])
            else { throw ForecastVariantError("configuration key '\(setting)': not understood") }
            policy.budgetCapacity = value
        }
        return (policy, 60)
    }

    @Test func aVariantIsNamedAndItsKeysApplied() throws {
        let variant = try ForecastVariant(
            flag: " quiet : policy.budget.capacity = 2, app.com.example.news.announce=alert, publish_every=900",
            option: "--compare")
        #expect(variant.name == "quiet")
        #expect(
            variant.overrides.map(\.key) == [
                "policy.budget.capacity", "app.com.example.news.announce", "publish_every",
            ])
        let scenario = try variant.apply(to: Self.base, option: "--compare", gatewaySettings: Self.gateway)
        #expect(scenario.policy.budgetCapacity == 2)
        #expect(scenario.publications.everySeconds == 900)
        #expect(scenario.kinds[0].profile.apps[0].announce == .alert)
        #expect(try ForecastVariant(flag: "publish_every=60").name == "publish_every=60", "named by its overrides")
    }

    @Test func aMistakeNamesTheOptionTheVariantAndTheKey() {
        func message(_ body: () throws -> Void) -> String {
            do { try body() } catch { return "\(error)" }
            return ""
        }
        #expect(message { _ = try ForecastVariant(flag: "x: nonsense") }.contains("expected key=value, got 'nonsense'"))
        let unknownApp = message {
            _ = try ForecastVariant(flag: "x: app.com.example.nope.announce=alert")
                .apply(to: Self.base, option: "--compare", gatewaySettings: Self.gateway)
        }
        #expect(unknownApp.hasPrefix("--compare x: no app 'com.example.nope'"))
        let gatewayKey = message {
            _ = try ForecastVariant(flag: "y: policy.other=1").apply(
                to: Self.base, option: "--assume", gatewaySettings: Self.gateway)
        }
        #expect(gatewayKey.hasPrefix("--assume y: configuration key 'policy.other=1'"))
        #expect(
            message {
                _ = try ForecastVariant(flag: "z: color=red").apply(
                    to: Self.base, option: "--compare", gatewaySettings: Self.gateway)
            }.contains("unknown key 'color'"))
    }

    @Test func aSearchIsEveryCombinationOrASeededSample() throws {
        let all = try ForecastVariant.search(
            ["publish_every=60,600", "policy.budget.capacity=1,2,3"], sample: nil, seed: 1)
        #expect(all.count == 6)
        #expect(all[0].name == "publish_every=60 policy.budget.capacity=1")
        let sample = try ForecastVariant.search(
            ["publish_every=60,600", "policy.budget.capacity=1,2,3"], sample: 3, seed: 7)
        let again = try ForecastVariant.search(
            ["publish_every=60,600", "policy.budget.capacity=1,2,3"], sample: 3, seed: 7)
        #expect(sample.count == 3 && sample.map(\.name) == again.map(\.name), "the same seed, the same sample")
        #expect(throws: ForecastVariantError.self) {
            try ForecastVariant.search(["publish_every="], sample: nil, seed: 1)
        }
    }

    @Test func theObjectiveIsNamedOrTheKindsAVariantChanges() throws {
        let news = try ForecastVariant(flag: "app.com.example.news.fetch=minimum")
        #expect(try ForecastObjective.ranking(nil, of: [news], in: Self.base) == ForecastObjective(kinds: ["news"]))
        #expect(
            try ForecastObjective.ranking(nil, of: [ForecastVariant(flag: "publish_every=60")], in: Self.base) == .fleet
        )
        #expect(try ForecastObjective.ranking("all", of: [news], in: Self.base) == .fleet)
        #expect(
            try ForecastObjective.ranking(" chat ", of: [news], in: Self.base) == ForecastObjective(kinds: ["chat"]))
        #expect(throws: ForecastVariantError.self) { try ForecastObjective.ranking("weather", of: [], in: Self.base) }
    }
}
