import Foundation
import Histogram
import NIOCore
import NIOHPACK
import PushModel
import Testing
import Yams

@testable import LoadGenerator

@Suite struct RecorderTests {
    let second: Int64 = 1_000_000_000

    @Test func secondsRollWithTheTimeGivenAndKeepEmptyOnes() {
        var recorder = BenchRecorder(kinds: 2)
        recorder.sent(kind: 0, at: 0)
        recorder.completed(kind: 0, .accepted, latencyNanoseconds: 2_000_000, at: 2_000_000)
        recorder.sent(kind: 1, at: 100)
        recorder.completed(
            kind: 1, .rejected(status: 400, reason: "BadDeviceToken"), latencyNanoseconds: 4_000_000, at: 5_000_000)
        // Nothing in second 1; second 2 has a request that never got an answer.
        recorder.sent(kind: 0, at: 2 * second + 1)
        recorder.completed(kind: 0, .failed("connection closed"), latencyNanoseconds: 0, at: 2 * second + 2)
        recorder.finish(at: 2 * second + 500)

        #expect(recorder.seconds.map(\.second) == [0, 1, 2])
        #expect(recorder.seconds.map(\.sent) == [2, 0, 1])
        #expect(recorder.seconds.map(\.accepted) == [1, 0, 0])
        #expect(recorder.seconds.map(\.rejected) == [1, 0, 0])
        #expect(recorder.seconds.map(\.failed) == [0, 0, 1])
        #expect(abs(recorder.seconds[0].maxMilliseconds - 4) < 0.05, "per-second figures: two significant digits")
        #expect(recorder.sent == 3 && recorder.accepted == 1)
        #expect(recorder.rejected == ["400 BadDeviceToken": 1])
        #expect(recorder.failed == ["connection closed": 1])
        #expect(recorder.acceptedByKind == [1, 0] && recorder.sentByKind == [2, 1])
        #expect(recorder.latency.totalCount == 2, "answers have a latency, failures do not")
    }

    @Test func latencyPercentilesComeFromTheHistogram() {
        var recorder = BenchRecorder(kinds: 1)
        for millisecond in 1...100 {
            recorder.sent(kind: 0, at: 0)
            recorder.completed(
                kind: 0, .accepted, latencyNanoseconds: Int64(millisecond) * 1_000_000, at: Int64(millisecond))
        }
        recorder.finish(at: second)
        let result = BenchResult(
            recorder: recorder, mix: [PushKind.builtIn[0]], scenario: Scenario(mix: [PushKind.builtIn[0]]),
            target: "test", startedAt: Date(), seconds: 1)
        #expect(abs(result.latency.p50 - 50) < 0.1)
        #expect(abs(result.latency.p99 - 99) < 0.1)
        #expect(abs(result.latency.max - 100) < 0.1)
        #expect(result.percentileCurve.first?.percentile == 0)
        #expect(result.percentileCurve.last?.percentile == 100)
        #expect(result.percentileCurve.map(\.milliseconds) == result.percentileCurve.map(\.milliseconds).sorted())
        // The report renders without network resources.
        let html = BenchReport.html(result)
        #expect(html.contains("<svg"))
        #expect(!html.contains("<script src") && !html.contains("<link"))
    }

    @Test func reasonsAreReadFromAPNsErrorBodies() {
        #expect(BenchConnectionHandler.reason(in: Array(#"{"reason":"BadDeviceToken"}"#.utf8)) == "BadDeviceToken")
        #expect(
            BenchConnectionHandler.reason(in: Array(#"{"reason":"Unregistered","timestamp":1700000000000}"#.utf8))
                == "Unregistered")
        #expect(BenchConnectionHandler.reason(in: []) == nil)
    }
}

@Suite struct ScenarioTests {
    @Test func theRealisticFileEqualsTheEmbeddedScenario() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Config/scenarios/realistic.yaml")
        let decoded = try YAMLDecoder().decode(Scenario.self, from: try String(contentsOf: url, encoding: .utf8))
        #expect(decoded == Scenario.realistic)
        #expect(decoded.problem() == nil)
    }

    @Test func unknownKeysAndBadValuesAreNamed() throws {
        #expect(throws: DecodingError.self) {
            try YAMLDecoder().decode(Scenario.self, from: "rate: 10\nconnection: 4\nmix: []")
        }
        #expect(throws: DecodingError.self) {
            try YAMLDecoder().decode(Scenario.self, from: "mix:\n  - name: a\n    payload: silent\n    priorty: 5")
        }
        let kind = PushKind(name: "x", weight: 1, push_type: "backgrnd", payload: .silent, priority: 7)
        #expect(Scenario(mix: [kind]).problem()?.hasPrefix("mix[0].push_type") == true)
        var fixed = kind
        fixed.push_type = "background"
        #expect(Scenario(mix: [fixed]).problem()?.hasPrefix("mix[0].priority") == true)
        #expect(
            Scenario(rate: 10, ramp_to: 20, connections: 0, mix: [PushKind.builtIn[0]]).problem()?.hasPrefix(
                "connections") == true)
        #expect(Scenario(mix: []).problem() == "mix: needs at least one kind")
    }

    @Test func mixFlagNamesBuiltInKinds() throws {
        let mix = try Scenario.mix(flag: "silent=60, alert=40")
        #expect(mix.map(\.name) == ["silent", "alert"])
        #expect(mix.map(\.weight) == [60, 40])
        #expect(throws: ScenarioError.self) { try Scenario.mix(flag: "silnet=1") }
        #expect(throws: ScenarioError.self) { try Scenario.mix(flag: "silent") }
    }

    @Test func kindsAreDrawnByWeight() {
        let mix = TrafficMix(try! Scenario.mix(flag: "silent=3,alert=1"))
        var random = FastRandom(seed: 7)
        var counts = [0, 0]
        for _ in 0..<40_000 { counts[mix.pick(&random)] += 1 }
        #expect(abs(Double(counts[0]) / 40_000 - 0.75) < 0.01)
    }

    @Test func requestsCarryTheKindsHeadersAndPaddedBodies() {
        var kind = PushKind.builtIn.first { $0.name == "silent-collapsing" }!
        kind.payload_bytes = 200
        kind.expiration_seconds = 60
        let mix = TrafficMix([kind])
        var random = FastRandom(seed: 1)
        let headers = mix.headers(
            kind: 0, target: PushTarget(token: "ab", topic: "com.example.app"), authorization: "bearer x",
            authority: "localhost", now: UnixTime(seconds: 1000), random: &random)
        #expect(headers.first(name: ":path") == "/3/device/ab")
        #expect(headers.first(name: "apns-push-type") == "background")
        #expect(headers.first(name: "apns-priority") == "5")
        #expect(headers.first(name: "apns-expiration") == "1060")
        #expect(headers.first(name: "apns-collapse-id")?.hasPrefix("silent-collapsing-") == true)
        let target = PushTarget(token: "ab", topic: "com.example.app")
        let body = mix.body(0, target: target, now: UnixTime(seconds: 1000), sequence: 0)
        #expect(body.readableBytes == 200)
        guard case .success(let summary) = PayloadScanner.scan(Array(body.readableBytesView)) else {
            Issue.record("the padded payload is not valid")
            return
        }
        #expect(summary.contentAvailable)
    }

    /// Widget and control kinds go to the apps' own tokens, with their push type's topic suffix and a
    /// `content-changed` payload; the shipped widgets scenario reads back without a problem.
    @Test func widgetAndControlKindsCarryTheirTopicAndContentChanged() throws {
        let kinds = ["widgets", "controls"].map {
            PushKind(name: $0, weight: 1, push_type: $0, payload: .contentChanged, priority: 10)
        }
        let mix = TrafficMix(kinds)
        let target = PushTarget(token: "ab", topic: "com.example.app")
        var random = FastRandom(seed: 1)
        for (index, type) in ["widgets", "controls"].enumerated() {
            let headers = mix.headers(
                kind: index, target: target, authorization: nil, authority: "localhost", now: UnixTime(seconds: 1),
                random: &random)
            #expect(headers.first(name: "apns-topic") == "com.example.app.push-type.\(type)")
            #expect(headers.first(name: "apns-push-type") == type)
            let body = mix.body(index, target: target, now: UnixTime(seconds: 1), sequence: 0)
            guard case .success(let summary) = PayloadScanner.scan(Array(body.readableBytesView)) else {
                Issue.record("the payload is not valid")
                return
            }
            #expect(summary.contentChanged)
        }
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Config/scenarios/widgets.yaml")
        let scenario = try YAMLDecoder().decode(Scenario.self, from: try String(contentsOf: url, encoding: .utf8))
        #expect(scenario.problem() == nil)
        #expect(scenario.mix.contains { $0.push_type == "widgets" && $0.payload == .contentChanged })
    }

    /// ActivityKit kinds go to Live Activity tokens of their class, with the liveactivity topic and the
    /// send time as timestamp; a mix whose kind has no token of its class is refused, naming it.
    @Test func liveActivityKindsGoToTheirTokens() throws {
        let targets = try PushTarget.parse(
            "aa01 com.example.scores\nbb02 com.example.scores start:GameAttributes\ncc03 com.example.scores update:g1\n",
            defaultTopic: nil)
        #expect(targets[1].activity == "start:GameAttributes")
        #expect(throws: ScenarioError.self) { try PushTarget.parse("aa01 com.example.a other:x", defaultTopic: nil) }
        let kinds = ["live-update", "live-start", "alert"].map { name in PushKind.builtIn.first { $0.name == name }! }
        let mix = TrafficMix(kinds)
        let pool = TargetPool(targets)
        #expect(pool.problem(mix: kinds) == nil)
        #expect(pool.target(for: .liveActivityUpdate, at: 7).token == "cc03")
        #expect(pool.target(for: .liveActivityStart, at: 3).token == "bb02")
        #expect(pool.target(for: .alert, at: 5).token == "aa01")
        var random = FastRandom(seed: 1)
        let update = pool.target(for: .liveActivityUpdate, at: 0)
        let headers = mix.headers(
            kind: 0, target: update, authorization: nil, authority: "localhost", now: UnixTime(seconds: 1000),
            random: &random)
        #expect(headers.first(name: "apns-topic") == "com.example.scores.push-type.liveactivity")
        #expect(headers.first(name: "apns-push-type") == "liveactivity")
        let body = String(buffer: mix.body(0, target: update, now: UnixTime(seconds: 1_800_000_000), sequence: 4))
        #expect(body.contains(#""event":"update","timestamp":1800000000"#))
        let start = String(
            buffer: mix.body(
                1, target: pool.target(for: .liveActivityStart, at: 0), now: UnixTime(seconds: 5), sequence: 1))
        #expect(start.contains(#""attributes-type":"GameAttributes""#))
        #expect(TargetPool(Array(targets[0...0])).problem(mix: kinds)?.contains("live-update") == true)
        var bad = kinds[0]
        bad.push_type = "alert"
        #expect(bad.problem(at: "mix[0]")?.contains("push_type") == true)
    }

    @Test func tokenFilesAreParsedWithTheirTopics() throws {
        let targets = try PushTarget.parse("# fleet\naabb com.example.app\n\nccdd\n", defaultTopic: "com.other")
        #expect(targets == [.init(token: "aabb", topic: "com.example.app"), .init(token: "ccdd", topic: "com.other")])
        #expect(throws: ScenarioError.self) { try PushTarget.parse("zz com.example.app", defaultTopic: nil) }
        #expect(throws: ScenarioError.self) { try PushTarget.parse("aabb", defaultTopic: nil) }
    }
}

@Suite struct ProgressTests {
    @Test func theProgressLineShowsRateErrorsAndTime() {
        var second = BenchRecorder.Second(second: 3)
        second.accepted = 990
        second.rejected = 10
        second.p99Milliseconds = 4.25
        let progress = BenchProgress(
            elapsedSeconds: 4.2, plannedSeconds: 20, sent: 4000, accepted: 3950, rejected: 40, failed: 2,
            lastSecond: second)
        #expect(progress.line.contains("1000/s"))
        #expect(progress.line.contains("p99 4.25 ms"))
        #expect(progress.line.contains("rejected 40"))
        #expect(progress.line.contains("16s left"))
    }
}
