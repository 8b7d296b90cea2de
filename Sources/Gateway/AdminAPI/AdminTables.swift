import Foundation

/// The admin API's lookups as tables for a terminal (`pushgate lookup`; `--json` prints the JSON).
public enum AdminTables {
    /// The table for a lookup's JSON answer, or nil when the answer is not a lookup this knows.
    public static func render(resource: String, json: String) -> String? {
        let data = Data(json.utf8)
        let decoder = JSONDecoder()
        switch resource {
        case "notifications": return (try? decoder.decode(NotificationJourney.self, from: data)).map(journey)
        case "tokens": return (try? decoder.decode(TokenState.self, from: data)).map(token)
        case "devices": return (try? decoder.decode(DeviceState.self, from: data)).map(device)
        default: return nil
        }
    }

    static func journey(_ journey: NotificationJourney) -> String {
        var out = "notification \(journey.apnsID) (apns-unique-id \(journey.uniqueID)): \(journey.deliveryState)\n"
        if let stored = journey.stored {
            out += table([
                ["state", stored.state + (stored.rule.map { " (\($0))" } ?? "")],
                ["device", stored.deviceID ?? "none (scripted token)"],
                ["topic", stored.topic],
                ["push type", "\(stored.pushType), priority \(stored.priority)"],
                ["collapse id", stored.collapseID ?? "-"],
                ["received", time(stored.receivedAt)],
                ["expires", stored.expiresAt.map(time) ?? "not stored (apns-expiration: 0)"],
            ])
        } else {
            out += "(not in the store: in-memory gateway)\n"
        }
        out += "\n"
        if journey.steps.isEmpty {
            out += "no decision in the log (it keeps the most recent 100,000 notifications)\n"
        } else {
            out += table(
                [["when", "event", "rule", "state"]]
                    + journey.steps.map { [time($0.at), $0.event, $0.rule ?? "-", $0.state] })
        }
        return out
    }

    static func token(_ state: TokenState) -> String {
        var out = table([
            ["token", state.token],
            ["device", state.deviceID],
            ["app", state.bundleID],
            ["status", state.status],
            ["connected", state.connected ? "yes" : "no"],
            ["owner node", state.owner ?? "-"],
        ])
        if let budget = state.budget { out += "\n" + self.budget([(state.bundleID, budget)]) }
        return out
    }

    static func device(_ state: DeviceState) -> String {
        var conditions: [String] = []
        if state.lowPowerMode { conditions.append("Low Power Mode") }
        if state.backgroundAppRefreshOff { conditions.append("Background App Refresh off") }
        var out = table([
            ["device", state.deviceID],
            ["connected", state.connected ? "yes" : "no"],
            ["conditions", conditions.isEmpty ? "none" : conditions.joined(separator: ", ")],
            ["owner node", state.owner ?? "-"],
        ])
        out += "\n" + table([["app", "token"]] + state.apps.map { [$0.bundleID, $0.token] })
        let budgets = state.apps.compactMap { app in app.budget.map { (app.bundleID, $0) } }
        if !budgets.isEmpty { out += "\n" + budget(budgets) }
        return out
    }

    static func budget(_ apps: [(String, BudgetState)]) -> String {
        table(
            [["app", "budget", "next refill", "held", "awaiting completion", "strikes", "cooling until", "state"]]
                + apps.map { app, budget in
                    [
                        app, "\(budget.budgetLeft) of \(budget.budgetCapacity)", budget.nextRefillAt.map(time) ?? "-",
                        budget.held.isEmpty ? "-" : budget.held.joined(separator: ", "),
                        budget.awaitingCompletion.isEmpty ? "-" : budget.awaitingCompletion.joined(separator: ", "),
                        String(budget.strikes), budget.coolingUntil.map(time) ?? "-", budget.appState,
                    ]
                })
    }

    /// Columns padded to their widest cell; the first row of a multi-column table is its header.
    static func table(_ rows: [[String]]) -> String {
        let columns = rows.map(\.count).max() ?? 0
        let widths = (0..<columns).map { column in rows.map { $0.count > column ? $0[column].count : 0 }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }

    /// Milliseconds since 1970 as UTC, to the millisecond.
    static func time(_ milliseconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss.SSS"
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000)) + " UTC"
    }
}
