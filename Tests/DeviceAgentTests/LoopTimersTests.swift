import NIOCore
import NIOEmbedded
import Testing

@testable import DeviceAgent

/// The simulators' timers: each runs once, in the window after its deadline, unless cancelled first,
/// whatever else its window holds; on an embedded loop, whose clock the test moves.
@Suite struct LoopTimersTests {
    static func at(_ milliseconds: Int64) -> NIODeadline { .uptimeNanoseconds(UInt64(milliseconds) * 1_000_000) }

    @Test func timersRunOnceInTheWindowAfterTheirDeadlineUnlessCancelled() {
        let loop = EmbeddedEventLoop()
        let timers = LoopTimers(loop: loop)
        var ran: [String] = []
        timers.schedule(at: Self.at(21)) { ran.append("a") }
        let b = timers.schedule(at: Self.at(25)) { ran.append("b") }
        timers.schedule(at: Self.at(29)) { ran.append("c") }
        timers.schedule(at: Self.at(30)) { ran.append("d") }
        timers.schedule(at: Self.at(31)) { ran.append("e") }
        b.cancel()
        b.cancel()
        #expect(timers.count == 4)

        loop.advanceTime(to: Self.at(29))
        #expect(ran.isEmpty, "nothing before its window ends")
        loop.advanceTime(to: Self.at(30))
        #expect(Set(ran) == ["a", "c", "d"], "the window of 21–30 ms at its end; b cancelled")
        loop.advanceTime(to: Self.at(40))
        #expect(ran.count == 4 && ran.last == "e")
        #expect(timers.count == 0)
        loop.advanceTime(to: Self.at(100))
        #expect(ran.count == 4, "each once")
    }

    @Test func aBodyMayCancelAnotherOfItsWindowAndScheduleAgain() {
        let loop = EmbeddedEventLoop()
        let timers = LoopTimers(loop: loop)
        var ran: [String] = []
        var first: LoopTimers.Timer?
        var second: LoopTimers.Timer?
        first = timers.schedule(at: Self.at(15)) {
            ran.append("first")
            second?.cancel()
            // Already due: it runs in a window of its own, at once.
            timers.schedule(at: Self.at(1)) { ran.append("again") }
        }
        second = timers.schedule(at: Self.at(16)) {
            ran.append("second")
            first?.cancel()
        }
        loop.advanceTime(to: Self.at(20))
        #expect(ran.count == 2 && Set(ran).isSubset(of: ["first", "second", "again"]))
        #expect(ran.contains("again") == ran.contains("first"), "whichever ran first kept the other from running")
        #expect(timers.count == 0)
        first?.cancel()
        second?.cancel()
    }

    @Test func cancellingMovesTheLastOfAWindowIntoTheGap() {
        let loop = EmbeddedEventLoop()
        let timers = LoopTimers(loop: loop)
        var ran: [Int] = []
        let scheduled = (0..<6).map { i in timers.schedule(at: Self.at(5)) { ran.append(i) } }
        scheduled[1].cancel()
        scheduled[5].cancel()
        scheduled[0].cancel()
        #expect(timers.count == 3)
        loop.advanceTime(to: Self.at(10))
        #expect(ran.sorted() == [2, 3, 4])
    }
}
