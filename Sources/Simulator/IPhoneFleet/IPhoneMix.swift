import DeviceRuntime
import Foundation
import Yams

/// `--iphones news=40,chat=30,…`: kinds of simulated iPhone (a name in Config/iphone, or a YAML file's
/// path) with their weights, turned into device counts.
public struct IPhoneMix: Sendable {
    public struct Kind: Sendable {
        public var name: String
        public var profile: IPhoneProfile
        public var weight: Double
    }

    public static let defaultFlag = "news=40,chat=30,podcast=20,misbehaving=10"

    public var kinds: [Kind]

    /// Reads the flag's kinds; errors name the flag and the entry.
    public init(flag: String, option: String = "--iphones") throws {
        var kinds: [Kind] = []
        for entry in flag.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            let weight = parts.count == 2 ? Double(parts[1]) : 1
            guard let weight, weight > 0, weight.isFinite, let name = parts.first, !name.isEmpty else {
                throw IPhoneFleetError.usage("\(option): expected name=weight (a weight > 0), got '\(entry)'")
            }
            let profile = try Self.load(name, option: option)
            let label =
                name.contains("/") ? String(name.split(separator: "/").last!.split(separator: ".").first!) : name
            guard !kinds.contains(where: { $0.name == label }) else {
                throw IPhoneFleetError.usage("\(option): '\(label)' twice")
            }
            kinds.append(Kind(name: label, profile: profile, weight: weight))
        }
        guard !kinds.isEmpty else { throw IPhoneFleetError.usage("\(option): name at least one kind of iPhone") }
        // One strategy per app: the announcer reads it by bundle id.
        var strategies: [String: (String, AppProfile.Announcement)] = [:]
        for kind in kinds {
            for app in kind.profile.apps {
                if let (other, announce) = strategies[app.bundle_id], announce != app.announce {
                    throw IPhoneFleetError.usage(
                        "\(option): \(app.bundle_id) is announced as \(announce.rawValue) in '\(other)' and as \(app.announce.rawValue) in '\(kind.name)'"
                    )
                }
                strategies[app.bundle_id] = (kind.name, app.announce)
            }
        }
        self.kinds = kinds
    }

    /// Device counts by weight, each kind's users given `opensPerHour` extra opens; refuses a kind whose
    /// users would then never open its apps.
    public func counts(devices: Int, opensPerHour: Double, option: String = "--iphones") throws -> [(
        name: String, profile: IPhoneProfile, devices: Int
    )] {
        var counts = counts(devices: devices)
        for index in counts.indices {
            counts[index].profile.users.extra_opens_per_day += opensPerHour * 24
            if counts[index].profile.users.neverOpens {
                throw IPhoneFleetError.usage(
                    "\(option) \(counts[index].name): its users never open the app (users.habit_hours is empty and users.extra_opens_per_day is 0): give them either in the profile, or add opens with --opens-per-hour"
                )
            }
        }
        return counts
    }

    /// Device counts by weight (largest remainder), each kind at least one when there are enough devices.
    public func counts(devices: Int) -> [(name: String, profile: IPhoneProfile, devices: Int)] {
        let total = kinds.map(\.weight).reduce(0, +)
        let shares = kinds.map { Double(devices) * $0.weight / total }
        var counts = shares.map { Int($0) }
        let order = shares.indices.sorted { shares[$0] - Double(counts[$0]) > shares[$1] - Double(counts[$1]) }
        for index in order.prefix(devices - counts.reduce(0, +)) { counts[index] += 1 }
        return kinds.indices.map { (kinds[$0].name, kinds[$0].profile, counts[$0]) }.filter { $0.devices > 0 }
    }

    /// Every app's backend strategy, by bundle id.
    public var strategies: [String: AppProfile.Announcement] {
        var all: [String: AppProfile.Announcement] = [:]
        for kind in kinds { for app in kind.profile.apps { all[app.bundle_id] = app.announce } }
        return all
    }

    /// The apps with a widget or a control (their backends send a push for each with each version).
    public var surfaces: [String: WidgetKitSurfaces] {
        var surfaces: [String: WidgetKitSurfaces] = [:]
        for app in kinds.flatMap(\.profile.apps) where !app.surfaces.isEmpty {
            surfaces[app.bundle_id, default: []].formUnion(app.surfaces)
        }
        return surfaces
    }

    /// Config/iphone/NAME.yaml, a path, or the embedded copy of a shipped one.
    public static func load(_ name: String, option: String) throws -> IPhoneProfile {
        let path = name.contains("/") || name.hasSuffix(".yaml") ? name : "Config/iphone/\(name).yaml"
        let text: String
        if let file = try? String(contentsOfFile: path, encoding: .utf8) {
            text = file
        } else if let embedded = EmbeddedIPhones.files[name] {
            text = embedded
        } else {
            throw IPhoneFleetError.usage(
                "\(option): no iPhone profile '\(name)' (no file at \(path); shipped: \(EmbeddedIPhones.files.keys.sorted().joined(separator: ", ")))"
            )
        }
        let profile: IPhoneProfile
        do {
            profile = try YAMLDecoder().decode(IPhoneProfile.self, from: text)
        } catch {
            throw IPhoneFleetError.usage("\(option) \(path): \(YAMLProblem.describe(error, in: text))")
        }
        if let problem = profile.problem() {
            throw IPhoneFleetError.usage("\(option) \(path): \(YAMLProblem.located(problem, in: text))")
        }
        return profile
    }
}
