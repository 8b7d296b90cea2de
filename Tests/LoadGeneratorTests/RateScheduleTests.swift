import Testing

@testable import LoadGenerator

@Suite struct RateScheduleTests {
    @Test func constantRateSendsAtExactIntervals() {
        let schedule = RateSchedule.constant(perSecond: 4, seconds: 2)
        #expect(schedule.count == 8)
        #expect((0..<8).map { schedule.offset(of: $0)! } == (0..<8).map { Int64($0) * 250_000_000 })
        #expect(schedule.offset(of: 8) == nil, "past the end")
    }

    @Test func oddRatesStayExactOverLongRuns() {
        let schedule = RateSchedule.constant(perSecond: 3, seconds: 3600)
        #expect(schedule.count == 10_800)
        #expect(schedule.offset(of: 1) == 333_333_333)
        #expect(schedule.offset(of: 3) == 1_000_000_000)
        #expect(schedule.offset(of: 10_799) == 3_599_666_666_666)
    }

    @Test func rampFollowsTheAreaUnderTheRate() {
        // From 0 to 100 per second over 10 s: 500 requests; n requests after t = sqrt(n / 5) seconds.
        let schedule = RateSchedule.ramp(from: 0.0001, to: 100, seconds: 10)
        #expect(schedule.count == 500)
        for n in [5, 20, 125, 499] {
            let expected = (Double(n) / 5).squareRoot() * 1e9
            #expect(abs(Double(schedule.offset(of: n)!) - expected) < 1e6, "request \(n)")
        }
        // The gaps shrink as the rate grows.
        let gaps = (1..<500).map { schedule.offset(of: $0)! - schedule.offset(of: $0 - 1)! }
        #expect(gaps.first! > gaps.last!)
    }

    @Test func stagesFollowEachOther() {
        let schedule = RateSchedule(stages: [
            .init(fromRate: 10, toRate: 10, seconds: 1), .init(fromRate: 20, toRate: 20, seconds: 1),
        ])
        #expect(schedule.count == 30)
        #expect(schedule.offset(of: 9) == 900_000_000)
        #expect(schedule.offset(of: 10) == 1_000_000_000)
        #expect(schedule.offset(of: 11) == 1_050_000_000)
        #expect(schedule.offset(of: 29) == 1_950_000_000)
    }

    @Test func connectionsShareTheScheduleByIndex() {
        // Request i goes on connection i % 3: each connection's requests are a third of the schedule,
        // together exactly the schedule.
        let plan = RunPlan(
            schedule: .constant(perSecond: 30, seconds: 1), limit: 30, durationNanoseconds: 1_000_000_000,
            connections: 3, streams: 10)
        let merged = (0..<3).flatMap { slot in stride(from: slot, to: 30, by: 3).map { plan.due($0)! } }.sorted()
        #expect(merged == (0..<30).map { Int64($0) * 1_000_000_000 / 30 })
        #expect(plan.due(30) == nil)
    }
}
