/// Which strategy to recommend when the numbers it depends on are not known: every candidate ran under
/// every assumption (`pushgate forecast --assume`), each run scored by an objective's freshness and cost.
/// The strategy with the best worst case, the one with the best average, and the best under each
/// assumption — where those differ, the recommendation depends on the assumption. A strategy is better
/// when fresher, and at equal freshness when it costs less awake time (then the earlier one).
public struct RobustChoice: Sendable, Equatable {
    /// One strategy across the assumptions.
    public struct Row: Sendable, Equatable {
        public var freshness: [Double]
        public var cost: [Double]
        public var worst: Double { freshness.min() ?? 0 }
        public var mean: Double { freshness.isEmpty ? 0 : freshness.reduce(0, +) / Double(freshness.count) }
        public var meanCost: Double { cost.isEmpty ? 0 : cost.reduce(0, +) / Double(cost.count) }
    }

    public var rows: [Row]
    /// The strategy whose least fresh assumption is the freshest.
    public var bestWorstCase: Int
    /// The strategy freshest on average over the assumptions.
    public var bestOnAverage: Int
    /// Under each assumption, the best strategy.
    public var bestUnder: [Int]

    /// `freshness[s][a]` and `cost[s][a]`: strategy `s` under assumption `a` (at least one of each).
    public init(freshness: [[Double]], cost: [[Double]]) {
        precondition(!freshness.isEmpty && freshness.count == cost.count, "a strategy's figures for each assumption")
        rows = zip(freshness, cost).map { Row(freshness: $0, cost: $1) }
        let rows = self.rows
        func best(_ score: (Row) -> Double, _ cost: (Row) -> Double) -> Int {
            rows.indices.min { a, b in
                let (sa, sb) = (score(rows[a]), score(rows[b]))
                if sa != sb { return sa > sb }
                let (ca, cb) = (cost(rows[a]), cost(rows[b]))
                return ca != cb ? ca < cb : a < b
            }!
        }
        bestWorstCase = best(\.worst, \.meanCost)
        bestOnAverage = best(\.mean, \.meanCost)
        bestUnder = rows[0].freshness.indices.map { assumption in
            best({ $0.freshness[assumption] }, { $0.cost[assumption] })
        }
    }

    /// Whether the best strategy is the same under every assumption.
    public var holdsUnderEveryAssumption: Bool { Set(bestUnder).count == 1 }
}

extension RobustChoice {
    /// The strategies under each assumption as a Markdown table (fresh at open, awake seconds per
    /// device-day), then the recommendation in a few sentences.
    public func text(strategies: [String], assumptions: [String], objective: String) -> String {
        func percent(_ share: Double) -> String { "\(Int((share * 100).rounded())) %" }
        var lines = [
            "Under each assumption — fresh at open of \(objective) (awake s per device-day):",
            "| variant | " + assumptions.joined(separator: " | ") + " | worst | mean |",
            "|---|" + String(repeating: "---|", count: assumptions.count + 2),
        ]
        for (index, row) in rows.enumerated() {
            let cells = zip(row.freshness, row.cost).map { "\(percent($0)) (\(ForecastResult.decimal($1)))" }
            var marks = ""
            if index == bestWorstCase { marks += " ◆" }
            if index == bestOnAverage { marks += " ●" }
            lines.append(
                "| \(strategies[index])\(marks) | " + cells.joined(separator: " | ")
                    + " | \(percent(row.worst)) | \(percent(row.mean)) |")
        }
        lines.append("")
        lines.append(
            "◆ Best worst case: \(strategies[bestWorstCase]) — \(percent(rows[bestWorstCase].worst)) at worst."
                + " ● Best on average: \(strategies[bestOnAverage]) — \(percent(rows[bestOnAverage].mean)).")
        if holdsUnderEveryAssumption {
            lines.append(
                "The recommendation holds under every assumption: \(strategies[bestUnder[0]]) is the best under each.")
        } else {
            var byStrategy: [Int: [String]] = [:]
            for (assumption, best) in bestUnder.enumerated() {
                byStrategy[best, default: []].append(assumptions[assumption])
            }
            let parts = byStrategy.keys.sorted().map {
                "\(strategies[$0]) under \(byStrategy[$0]!.joined(separator: ", "))"
            }
            lines.append("The recommendation changes with the assumption: " + parts.joined(separator: "; ") + ".")
        }
        return lines.joined(separator: "\n")
    }
}
