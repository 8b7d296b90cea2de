import NIOCore
import NIOPosix

/// A simulated fleet's timers on one event loop, in windows of `tick` (10 ms): each window is one task
/// in NIO's scheduler however many timers fall due in it, and a timer is a slot in its window's list
/// (scheduling it appends, cancelling it moves the list's last into its place).
///
/// NIO keeps an event loop's scheduled tasks in a heap: each push and pop copies tasks along a path of
/// log₂ n (every copy retains the task's closures and promise), and cancelling one scans the whole heap.
/// A simulator holds a timer or two a device — its keep-alive, a wake's completion, the runtime's next
/// deadline, re-armed at each of its events — and that heap took an eighth of the simulators' CPU in a
/// silent wave (perf, `Benchmarks/fleet.sh 15000 3 5`).
///
/// Confined to its loop: `schedule` and `cancel` run on it (`LoopTimers.on(_:)` gives the timers of the
/// loop it is called on).
final class LoopTimers: @unchecked Sendable {
    /// The windows' length, nanoseconds: a timer runs at most this long after its deadline.
    static let tick: UInt64 = 10_000_000

    /// One scheduled body; `cancel` keeps it from running.
    final class Timer {
        fileprivate let owner: LoopTimers
        fileprivate var window: UInt64 = 0
        /// Its place in its window's list; -1 once taken out (run, or cancelled).
        fileprivate var index = -1
        fileprivate var body: (() -> Void)?

        fileprivate init(owner: LoopTimers, body: @escaping () -> Void) {
            self.owner = owner
            self.body = body
        }

        /// On the timer's loop. Nothing once it has run or been cancelled.
        func cancel() {
            guard body != nil else { return }
            body = nil
            owner.remove(self)
        }
    }

    /// Each thread's, for the event loop it runs.
    private static let perThread = ThreadSpecificVariable<LoopTimers>()

    let loop: any EventLoop
    /// Timers by window (their deadline ÷ `tick`, rounded up), in no particular order.
    private var windows: [UInt64: [Timer]] = [:]

    init(loop: any EventLoop) { self.loop = loop }

    /// The timers of `loop`, which this runs on: made on first use, one a thread (NIO runs a loop a
    /// thread). A loop sharing its thread with another's timers (an embedded loop in a test) gets timers
    /// of its own each call.
    static func on(_ loop: any EventLoop) -> LoopTimers {
        loop.assertInEventLoop()
        if let timers = perThread.currentValue { return timers.loop === loop ? timers : LoopTimers(loop: loop) }
        let timers = LoopTimers(loop: loop)
        perThread.currentValue = timers
        return timers
    }

    /// Runs `body` on `loop` at `deadline` (at most `tick` after it). Called on `loop`.
    @discardableResult
    static func schedule(on loop: any EventLoop, at deadline: NIODeadline, _ body: @escaping () -> Void) -> Timer {
        on(loop).schedule(at: deadline, body)
    }

    @discardableResult
    func schedule(at deadline: NIODeadline, _ body: @escaping () -> Void) -> Timer {
        let timer = Timer(owner: self, body: body)
        let window = (deadline.uptimeNanoseconds + Self.tick - 1) / Self.tick
        timer.window = window
        if windows[window] == nil {
            windows[window] = []
            loop.scheduleTask(deadline: .uptimeNanoseconds(window * Self.tick)) { self.run(window) }
        }
        timer.index = windows[window]!.count
        windows[window]!.append(timer)
        return timer
    }

    private func remove(_ timer: Timer) {
        guard timer.index >= 0 else { return }
        let index = timer.index
        timer.index = -1
        windows[timer.window]?.withUnsafeMutableBufferPointer { list in
            let last = list.count - 1
            if index != last {
                list.swapAt(index, last)
                list[index].index = index
            }
        }
        windows[timer.window]?.removeLast()
    }

    private func run(_ window: UInt64) {
        guard let due = windows.removeValue(forKey: window) else { return }
        for timer in due { timer.index = -1 }
        // A body may cancel a later timer of this window (already taken out: only its body is cleared),
        // or schedule another, into a window of its own.
        for timer in due {
            guard let body = timer.body else { continue }
            timer.body = nil
            body()
        }
    }

    /// Timers waiting, for tests.
    var count: Int { windows.values.reduce(0) { $0 + $1.count } }
}
