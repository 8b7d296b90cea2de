import Foundation
import FuzzTargets
import ProviderAPI
import PushModel
import Testing

/// Every input in the repository's fuzz corpus and regressions, replayed through its target: what
/// fuzzing once found stays found. (Fuzz/run.sh is the fuzzing itself; it is not run here.)
@Suite struct FuzzRegressionTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test(arguments: FuzzTarget.allCases)
    func everyKeptInputPasses(_ target: FuzzTarget) throws {
        var count = 0
        for directory in FuzzCorpus.directories(of: target, root: Self.root) {
            for file in try FuzzCorpus.files(at: directory) {
                target.run(try FuzzCorpus.read(file))
                count += 1
            }
        }
        #expect(count > 0, "Fuzz/corpus/\(target.rawValue) has no seeds")
    }
}

/// The seeds reach the deepest path of their target (else fuzzing starts at the first refusal).
@Suite struct FuzzSeedTests {
    @Test func aSeededRequestIsAcceptedAndItsNearMissesRefused() throws {
        let seeds = FuzzSeeds.seeds(for: .requestHead, root: FuzzRegressionTests.root)
        for name in ["alert", "background", "collapse", "live-activity"] {
            guard case .success = FuzzTarget.decideRequest(seeds[name]!) else {
                Issue.record(
                    "the \(name) seed is not accepted: \(String(describing: FuzzTarget.decideRequest(seeds[name]!)))")
                continue
            }
        }
        #expect(FuzzTarget.decideRequest(seeds["malformed"]!) == nil)
        guard case .failure(let rejection) = FuzzTarget.decideRequest(seeds["no-token"]!) else {
            Issue.record("the no-token seed is accepted")
            return
        }
        #expect(rejection.reason.rawValue == "MissingProviderToken")
    }

    /// A connection's seeds reach the request handler's answers through the codec: the alert is decided
    /// down to the intake (which refuses it: 500), the oversized header list is answered 431 on its stream.
    @Test func aSeededConnectionIsAnswered() {
        let seeds = FuzzSeeds.seeds(for: .http2Connection, root: FuzzRegressionTests.root)
        #expect(FuzzTarget.answeredStatuses(seeds["alert"]!) == [1: "500"])
        #expect(FuzzTarget.answeredStatuses(seeds["two-streams"]!) == [1: "500", 3: "500"])
        #expect(FuzzTarget.answeredStatuses(seeds["continuation"]!) == [1: "500"])
        #expect(FuzzTarget.answeredStatuses(seeds["oversized-headers"]!) == [1: "431"])
        #expect(FuzzTarget.answeredStatuses(seeds["reset"]!).isEmpty, "reset before its body")
        // A request a read: the token the first request taught the codec is elided from the next two, which
        // are answered as the first is.
        let repeated = seeds["repeated-token"]!
        #expect(FuzzTarget.answeredStatuses(repeated) == [1: "500", 3: "500", 5: "500"])
        #expect(
            FuzzTarget.answeredStatuses(repeated, readPerRequest: true) == [1: "500", 3: "500", 5: "500"])
    }

    @Test func theSeedsInTheRepositoryAreTheGeneratedOnes() throws {
        // Signed tokens differ each time they are made (ES256 is randomised), so names are compared.
        for target in FuzzTarget.allCases {
            let kept = Set(
                try FuzzCorpus.files(at: FuzzRegressionTests.root + "/Fuzz/corpus/" + target.rawValue)
                    .map { ($0 as NSString).lastPathComponent }.filter { $0.hasPrefix("seed-") })
            let generated = Set(FuzzSeeds.seeds(for: target, root: FuzzRegressionTests.root).keys.map { "seed-" + $0 })
            #expect(kept == generated, "run `swift run pushgate-fuzz seed .` (\(target.rawValue))")
        }
    }
}
