import DeviceRuntime

/// What a comparison of strategies is asked: how fresh some kinds of iPhone found their content at open,
/// and what it cost them (awake seconds per device-day). A search that varies the news app's strategy asks
/// about the iPhones that run it; the fleet's figure would drown its change in the other kinds' opens.
public struct ForecastObjective: Sendable, Equatable {
    /// The kinds counted; nil: the whole fleet.
    public var kinds: Set<String>?

    public init(kinds: Set<String>?) { self.kinds = kinds }

    public static let fleet = ForecastObjective(kinds: nil)

    /// "all", or the kinds' names.
    public var name: String { kinds.map { $0.sorted().joined(separator: ", ") } ?? "all" }

    /// Share of the kinds' opens at which the app held the newest version (0 without opens).
    public func freshness(_ result: ForecastResult) -> Double {
        guard let kinds else { return result.report.rows.last?.freshAtOpen ?? 0 }
        let rows = result.report.rows.filter { kinds.contains($0.profile) }
        let opens = rows.map(\.opens).reduce(0, +)
        return opens == 0 ? 0 : Double(rows.map(\.freshOpens).reduce(0, +)) / Double(opens)
    }

    /// The kinds' awake seconds per device-day (their devices weigh them).
    public func cost(_ result: ForecastResult) -> Double {
        guard let kinds else { return result.costs.last?.awakeSecondsPerDeviceDay ?? 0 }
        let rows = result.costs.filter { kinds.contains($0.profile) }
        let devices = rows.map(\.devices).reduce(0, +)
        guard devices > 0 else { return 0 }
        return rows.map { $0.awakeSecondsPerDeviceDay * Double($0.devices) }.reduce(0, +) / Double(devices)
    }
}

extension ForecastObjective {
    /// Whose freshness ranks the variants: `named` (`--objective`: kinds of iPhone, comma-separated, or
    /// `all`), else the kinds whose apps a variant changes (`app.<bundle id>.…`), else the fleet.
    public static func ranking(_ named: String?, of variants: [ForecastVariant], in base: ForecastScenario)
        throws(ForecastVariantError) -> ForecastObjective
    {
        let kinds = Set(base.kinds.map(\.name))
        if let named {
            if named == "all" { return .fleet }
            let chosen = Set(named.split(separator: ",").map { String($0.trimmed) })
            if let unknown = chosen.subtracting(kinds).sorted().first {
                throw ForecastVariantError(
                    "--objective: no kind of iPhone '\(unknown)' in this fleet (\(kinds.sorted().joined(separator: ", ")), or all)"
                )
            }
            return ForecastObjective(kinds: chosen)
        }
        let bundles = Set(
            variants.flatMap(\.overrides).map(\.key).filter { $0.hasPrefix("app.") }.compactMap { key -> String? in
                let rest = key.dropFirst("app.".count)
                return rest.lastIndex(of: ".").map { String(rest[..<$0]) }
            })
        let changed = base.kinds.filter { kind in kind.profile.apps.contains { bundles.contains($0.bundle_id) } }
        let names = Set(changed.map(\.name))
        return names.isEmpty || names == kinds ? .fleet : ForecastObjective(kinds: names)
    }
}
