import Forecast
import Testing

/// The sentence `pushgate forecast --search` ends with when what runs today is not on the front: it calls
/// a variant fresher or cheaper only when the figures it prints say so (issue 51: "17 % against 17 %").
@Suite struct ForecastVerdictTests {
    @Test func aVariantIsCalledFresherOnlyWhenItsPrintedShareIsHigher() {
        let same = ForecastComparison.whyBetter("v", fresh: (0.1704, 0.1701), cost: (100, 140))
        #expect(same == "v is as fresh (17 %) for less awake time (100.0 s per device-day against 140.0).")
        let fresher = ForecastComparison.whyBetter("v", fresh: (0.25, 0.17), cost: (140, 140))
        #expect(fresher == "v is fresher (25 % against 17 %) for the same awake time (140.0 s per device-day).")
        let both = ForecastComparison.whyBetter("v", fresh: (0.25, 0.17), cost: (90, 140))
        #expect(both.hasPrefix("v is fresher (25 % against 17 %) for less awake time"))
        let invisible = ForecastComparison.whyBetter("v", fresh: (0.1704, 0.1701), cost: (140.01, 140.02))
        #expect(invisible.contains("as fresh (17 %)") && invisible.contains("digits not printed"))
        #expect(!invisible.contains("fresher"))
    }
}
