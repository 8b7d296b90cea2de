import DeviceRuntime
import PushModel
import PushPolicy

/// One what-if of `pushgate forecast --variant` or `--search`: a name and the overrides it makes to the
/// scenario — configuration keys (`policy.*`, `devices.keep_alive_seconds`, through the same table as
/// `--set`), an app's strategy (`app.<bundle id>.announce | fetch | background_download | item_bytes`)
/// and the publication cadence (`publish_every`).
public struct ForecastVariant: Sendable {
    public var name: String
    public var overrides: [(key: String, value: String)]

    static let appKeys = [
        "announce", "fetch", "background_download", "item_bytes", "live_activities", "channels",
        "live_activity_priority", "frequent_pushes", "widget", "control",
    ]

    /// `name: key=value, key=value` (the name may be left out: the overrides name it).
    public init(flag: String, option: String = "--variant") throws(ForecastVariantError) {
        var text = Substring(flag)
        var name: String?
        if let colon = flag.firstIndex(of: ":"), !flag[..<colon].contains("=") {
            name = String(flag[..<colon].trimmed)
            text = flag[flag.index(after: colon)...]
        }
        var overrides: [(key: String, value: String)] = []
        for part in text.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { String($0.trimmed) }
            guard pair.count == 2, !pair[0].isEmpty else {
                throw ForecastVariantError("\(option) '\(flag)': expected key=value, got '\(part.trimmed)'")
            }
            overrides.append((pair[0], pair[1]))
        }
        self.overrides = overrides
        self.name = name ?? overrides.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
        if self.name.isEmpty { self.name = "as configured" }
    }

    public init(name: String, overrides: [(key: String, value: String)]) {
        self.name = name
        self.overrides = overrides
    }

    /// The gateway's settings a variant may change (`policy.*`, `devices.keep_alive_seconds`): given the
    /// `key=value` overrides, the policy and keep-alive interval the configuration gives with them (the
    /// gateway's own key table parses them, as `--set`; the message of its error names the key).
    public typealias GatewaySettings = ([String]) throws -> (policy: PolicySettings, keepAliveSeconds: Int)

    /// The scenario with the overrides made; errors name the option and the key.
    public func apply(to base: ForecastScenario, option: String, gatewaySettings: GatewaySettings)
        throws(ForecastVariantError) -> ForecastScenario
    {
        var scenario = base
        var settings: [String] = []
        for (key, value) in overrides {
            if key == "publish_every" {
                guard let seconds = Double(value), seconds >= 0 else {
                    throw ForecastVariantError(
                        "\(option) \(name): publish_every: expected seconds (≥ 0), got '\(value)'")
                }
                scenario.publications.everySeconds = seconds
            } else if key.hasPrefix("app.") {
                try applyApp(key, value, to: &scenario, option: option)
            } else if key.hasPrefix("policy.") || key == "devices.keep_alive_seconds" {
                settings.append("\(key)=\(value)")
            } else {
                throw ForecastVariantError(
                    "\(option) \(name): unknown key '\(key)' (policy.*, devices.keep_alive_seconds, app.<bundle id>.{\(Self.appKeys.joined(separator: ","))}, publish_every)"
                )
            }
        }
        if !settings.isEmpty {
            do {
                (scenario.policy, scenario.keepAliveSeconds) = try gatewaySettings(settings)
            } catch {
                throw ForecastVariantError("\(option) \(name): \(error)")
            }
        }
        return scenario
    }

    private func applyApp(_ key: String, _ value: String, to scenario: inout ForecastScenario, option: String)
        throws(ForecastVariantError)
    {
        let parts = key.dropFirst("app.".count)
        guard let dot = parts.lastIndex(of: "."), Self.appKeys.contains(String(parts[parts.index(after: dot)...]))
        else {
            throw ForecastVariantError(
                "\(option) \(name): '\(key)': expected app.<bundle id>.{\(Self.appKeys.joined(separator: ","))}")
        }
        let bundleID = String(parts[..<dot])
        let field = String(parts[parts.index(after: dot)...])
        var found = false
        for kind in scenario.kinds.indices {
            for app in scenario.kinds[kind].profile.apps.indices
            where scenario.kinds[kind].profile.apps[app].bundle_id == bundleID {
                found = true
                var profile = scenario.kinds[kind].profile.apps[app]
                switch field {
                case "announce":
                    guard let announce = AppProfile.Announcement(rawValue: value) else {
                        throw ForecastVariantError(
                            "\(option) \(name): \(key): expected one of \(AppProfile.Announcement.allCases.map(\.rawValue).joined(separator: ", ")), got '\(value)'"
                        )
                    }
                    profile.announce = announce
                case "fetch": profile.fetch = value
                case "background_download", "frequent_pushes", "widget", "control":
                    guard let flag = Bool(value) else {
                        throw ForecastVariantError("\(option) \(name): \(key): expected true or false, got '\(value)'")
                    }
                    switch field {
                    case "frequent_pushes": profile.frequent_pushes = flag
                    case "widget": profile.widget = flag
                    case "control": profile.control = flag
                    default: profile.background_download = flag
                    }
                case "live_activities", "channels", "live_activity_priority":
                    guard let number = Int(value) else {
                        throw ForecastVariantError("\(option) \(name): \(key): expected a number, got '\(value)'")
                    }
                    switch field {
                    case "live_activities": profile.live_activities = number
                    case "channels": profile.channels = number
                    default: profile.live_activity_priority = number
                    }
                default:
                    guard let bytes = Int(value) else {
                        throw ForecastVariantError(
                            "\(option) \(name): \(key): expected a number of bytes, got '\(value)'")
                    }
                    profile.item_bytes = bytes
                }
                if let problem = profile.problem() {
                    throw ForecastVariantError("\(option) \(name): \(key): \(problem)")
                }
                scenario.kinds[kind].profile.apps[app] = profile
                // What the kind's iOS allows (a channel, a widget or a control reloaded by its push).
                if let problem = scenario.kinds[kind].profile.problem() {
                    throw ForecastVariantError(
                        "\(option) \(name): \(key): kind '\(scenario.kinds[kind].name)': \(problem)")
                }
            }
        }
        guard found else {
            let known = Set(scenario.kinds.flatMap { $0.profile.apps.map(\.bundle_id) }).sorted()
            throw ForecastVariantError(
                "\(option) \(name): no app '\(bundleID)' in the fleet (its apps: \(known.joined(separator: ", ")))")
        }
    }

    /// `--search key=v1,v2,v3 …`: every combination of the dimensions' values (or `sample` of them,
    /// chosen by the seed), each a variant.
    public static func search(_ dimensions: [String], sample: Int?, seed: UInt64, option: String = "--search")
        throws(ForecastVariantError) -> [ForecastVariant]
    {
        var parsed: [(String, [String])] = []
        for flag in dimensions {
            let pair = flag.split(separator: "=", maxSplits: 1).map { String($0.trimmed) }
            guard pair.count == 2, !pair[0].isEmpty else {
                throw ForecastVariantError("\(option): expected key=value1,value2,…, got '\(flag)'")
            }
            let values = pair[1].split(separator: ",").map { String($0.trimmed) }
            guard !values.isEmpty else { throw ForecastVariantError("\(option) \(pair[0]): no values") }
            parsed.append((pair[0], values))
        }
        var combinations: [[(key: String, value: String)]] = [[]]
        for (key, values) in parsed {
            combinations = combinations.flatMap { combination in values.map { combination + [(key, $0)] } }
        }
        if let sample, sample < combinations.count {
            // A seeded choice of `sample` combinations, kept in their order.
            var random = FastRandom(seed: seed)
            var indices = Array(combinations.indices)
            for index in indices.indices.reversed() where index > 0 {
                indices.swapAt(index, Int(random.next() % UInt64(index + 1)))
            }
            combinations = indices.prefix(sample).sorted().map { combinations[$0] }
        }
        return combinations.map { overrides in
            ForecastVariant(
                name: overrides.map { "\($0.key)=\($0.value)" }.joined(separator: " "), overrides: overrides)
        }
    }
}

/// A what-if that cannot be made: the message names the option, the variant and the key.
public struct ForecastVariantError: Error, CustomStringConvertible, Sendable {
    public let description: String

    init(_ description: String) { self.description = description }
}

extension StringProtocol {
    /// Without the spaces and tabs around it.
    var trimmed: SubSequence {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}
