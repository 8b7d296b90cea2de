import Foundation
import TestSupport
import Testing

/// `pushgate forecast` as a user runs it: what-ifs side by side, a search and its Pareto front, the
/// files it writes, and an error that names the key.
@Suite struct ForecastCommandTests {
    /// Runs the built binary to its end (bounded) and returns its status and output.
    func forecast(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("forecast-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appendingPathComponent("out.txt").path
        let process = try GatewayProcess(arguments: ["forecast"] + arguments, logPath: log)
        let status = try #require(await process.exitStatus(within: 120), "forecast did not end")
        return (status, try String(contentsOfFile: log, encoding: .utf8))
    }

    @Test(.enabled(if: GatewayProcess.binary != nil, "the pushgate binary is not built"))
    func comparesAndSearchesAndWritesItsFiles() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "forecast-files-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let json = directory.appendingPathComponent("f.json").path
        let html = directory.appendingPathComponent("f.html").path
        let (status, output) = try await forecast([
            "--devices", "40", "--hours", "3", "--threads", "2", "--compare", "budget 5: policy.budget.capacity=5",
            "--search", "policy.budget.capacity=2,8", "--search", "app.com.example.news.announce=silent,none",
            "--json", json, "--html", html,
        ])
        #expect(status == 0, "\(output)")
        #expect(
            output.contains("| variant | fresh at open (news) | awake s (news) | fresh at open |"), "ranked by news")
        #expect(output.contains("| as configured (today) |"))
        #expect(output.contains("| budget 5 |"))
        #expect(output.contains("| policy.budget.capacity=8 app.com.example.news.announce=none |"))
        #expect(output.contains("Pareto front"))
        let document =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any]
        #expect((document?["runs"] as? [Any])?.count == 6)
        #expect((document?["paretoFront"] as? [String])?.isEmpty == false)
        let page = try String(contentsOfFile: html, encoding: .utf8)
        #expect(page.contains("<table>") && page.contains("<th>fresh at open</th>"))
        #expect(!page.contains("|---"))
    }

    @Test(.enabled(if: GatewayProcess.binary != nil, "the pushgate binary is not built"))
    func aBadWhatIfNamesItsKey() async throws {
        let unknown = try await forecast([
            "--devices", "5", "--hours", "1", "--compare", "x: app.com.example.nope.announce=alert",
        ])
        #expect(unknown.status != 0)
        #expect(unknown.output.contains("no app 'com.example.nope'"))
        let range = try await forecast(["--devices", "5", "--hours", "1", "--search", "policy.budget.capacity=0"])
        #expect(range.status != 0)
        #expect(range.output.contains("policy.budget.capacity"))
    }

    /// `--assume`: every variant under every assumption, ranked by the kinds whose apps the variants
    /// change, with the best worst case, the best average and whether the answer holds; in the JSON too.
    @Test(.enabled(if: GatewayProcess.binary != nil, "the pushgate binary is not built"))
    func aSearchUnderSeveralAssumptionsNamesTheStrategyThatHolds() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("assume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let json = directory.appendingPathComponent("a.json").path
        let (status, output) = try await forecast([
            "--devices", "30", "--hours", "3", "--threads", "2", "--search",
            "app.com.example.news.announce=silent,none",
            "--assume", "policy.budget.capacity=1,5", "--assume", "policy.budget.model=per_app,both", "--json", json,
        ])
        #expect(status == 0, "\(output)")
        #expect(output.contains("Under each assumption — fresh at open of news (awake s per device-day):"))
        #expect(
            output.contains(
                "| variant | policy.budget.capacity=1 policy.budget.model=per_app | policy.budget.capacity=1 policy.budget.model=both |"
            ))
        #expect(output.contains("◆ Best worst case: "))
        #expect(output.contains("The recommendation "))
        #expect(output.contains("| variant | fresh at open (news) | awake s (news) | fresh at open |"))
        let document =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any]
        #expect((document?["runs"] as? [Any])?.count == 3 * 4)
        // Today's configuration is the announce=silent variant: under each assumption it ran once.
        #expect(output.contains("(8 of 8)") && !output.contains("of 12)"), "\(output)")
        #expect(document?["objective"] as? String == "news")
        let assumptions = document?["assumptions"] as? [String: Any]
        #expect((assumptions?["bestUnder"] as? [String])?.count == 4)

        let notPolicy = try await forecast(["--devices", "5", "--hours", "1", "--assume", "publish_every=60,600"])
        #expect(notPolicy.status != 0)
        #expect(notPolicy.output.contains("--assume 'publish_every=60,600': an assumption is a policy.* key"))
        let unknown = try await forecast(["--devices", "5", "--hours", "1", "--objective", "weather"])
        #expect(unknown.status != 0)
        #expect(unknown.output.contains("--objective: no kind of iPhone 'weather'"))
    }

    /// A negative number is a value out of range, not a missing one; a malformed kind of iPhone names
    /// its file, its line and its key.
    @Test(.enabled(if: GatewayProcess.binary != nil, "the pushgate binary is not built"))
    func aBadValueOrKindOfIPhoneNamesWhereItIs() async throws {
        let negative = try await forecast(["--devices", "5", "--hours", "-1"])
        #expect(negative.status != 0)
        #expect(negative.output.contains("--hours: from more than 0 to 744, got -1"), "\(negative.output)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kind-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let kinds = [
            (
                "fetch.yaml", "ios: 17\napps:\n  - bundle_id: com.example.x\n    fetch: banana\n",
                "line 4: apps[0].fetch"
            ),
            ("missing.yaml", "ios: 17\napps:\n  - fetch: 3600\n", "line 3: apps[0].bundle_id: missing"),
            ("yaml.yaml", "ios: 17\napps:\n  - bundle_id: com.x\n   bad: [\n", "not valid YAML: 4:"),
        ]
        for (name, text, expected) in kinds {
            let path = directory.appendingPathComponent(name).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            let result = try await forecast(["--devices", "5", "--hours", "1", "--iphones", "\(path)=1"])
            #expect(result.status != 0)
            #expect(result.output.contains("--iphones \(path): \(expected)"), "\(result.output)")
        }
    }
}
