// Policy decisions per second on one core with 1,000,000 (device, app) states in memory, and bytes
// per state. Run by Benchmarks/policy.sh (release build, pinned with taskset).
import Foundation
import PushModel
import PushPolicy

func residentBytes() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = statm.split(separator: " ")
    return (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
}

let arguments = CommandLine.arguments
let stateCount = arguments.count > 1 ? Int(arguments[1])! : 1_000_000
let eventCount = arguments.count > 2 ? Int(arguments[2])! : 5_000_000
let start = UnixTime(seconds: 1_800_000_000)
var random = FastRandom()

/// One notification value reused with a new id: the benchmark measures the policy, not allocation of payloads.
let token = DeviceToken(String(repeating: "ab", count: 32))!
func push(_ index: Int, _ kind: NotificationClass, at now: UnixTime, random: inout FastRandom) -> PushNotification {
    PushNotification(
        id: APNsID.generate(using: &random), deviceToken: token, topic: Topic("com.example.app")!,
        bundleID: "com.example.app", pushType: kind == .silent ? .background : .alert,
        priority: kind == .silent ? .conservePower : .immediate, expiration: .storeByDefault, collapseID: nil,
        notificationClass: kind, payload: [], teamID: nil, receivedAt: now)
}

var engine = ThrottleEngine(decisionLogCapacity: 0)
let before = residentBytes()
// Each device's app woke once on budget and completed in time: a resting state with a part-used bucket.
var now = start
for device in 0..<stateCount {
    let wake = push(device, .silent, at: now, random: &random)
    _ = engine.received(wake, device: DeviceSlot(device), now: now)
    _ = engine.completed(
        device: DeviceSlot(device), bundleID: "com.example.app", id: wake.id, result: .newData, now: now)
}
let after = residentBytes()
print("states: \(engine.stateCount), resident bytes per state: \((after - before) / max(1, engine.stateCount))")

// Pre-build the events so the timed loop measures decisions only: 40 % silent pushes, 15 % alerts,
// 15 % keep-alives, 30 % completions of recent wakes (one in ten of them late).
enum Event {
    case silent(DeviceSlot, PushNotification)
    case alert(DeviceSlot, PushNotification)
    case keepAlive(DeviceSlot)
    case complete(DeviceSlot, APNsID, late: Bool)
}
var events: [Event] = []
events.reserveCapacity(eventCount)
var recentWakes: [(DeviceSlot, APNsID)] = []
for _ in 0..<eventCount {
    let device = DeviceSlot(random.next() % UInt64(stateCount))
    switch random.next() % 100 {
    case 0..<40:
        let push = push(0, .silent, at: now, random: &random)
        recentWakes.append((device, push.id))
        events.append(.silent(device, push))
    case 40..<55: events.append(.alert(device, push(0, .alerting, at: now, random: &random)))
    case 55..<70: events.append(.keepAlive(device))
    default:
        if let (wakeDevice, id) = recentWakes.popLast() {
            events.append(.complete(wakeDevice, id, late: random.next() % 10 == 0))
        } else {
            events.append(.keepAlive(device))
        }
    }
}

var actions: [PolicyAction] = []
actions.reserveCapacity(16)
let clock = ContinuousClock()
var delivered = 0
// Five consecutive rounds over the event list, each timed: a shared machine's noise shows as spread
// between rounds, and the median is the figure to quote.
let rounds = 5
var rates: [Double] = []
for round in 0..<rounds {
    let range = (events.count * round / rounds)..<(events.count * (round + 1) / rounds)
    let elapsed = clock.measure {
        for index in range {
            // Virtual time moves 1 ms per event: about 83 minutes over five million decisions.
            let time = start.adding(milliseconds: Int64(index))
            actions.removeAll(keepingCapacity: true)
            switch events[index] {
            case .silent(let device, let push): engine.received(push, device: device, now: time, into: &actions)
            case .alert(let device, let push): engine.received(push, device: device, now: time, into: &actions)
            case .keepAlive(let device): engine.keepAlive(device: device, now: time, into: &actions)
            case .complete(let device, let id, let late):
                engine.completed(
                    device: device, bundleID: "com.example.app", id: id, result: .newData,
                    now: late ? time.adding(seconds: 40) : time, into: &actions)
            }
            delivered &+= actions.count
            if index % 1000 == 0 { engine.advance(to: time, into: &actions) }
        }
    }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    rates.append(Double(range.count) / seconds)
}
let sorted = rates.sorted()
print(
    String(
        format: "decisions/s over %d rounds of %d events: median %.0f (min %.0f, max %.0f); %d actions",
        rounds, eventCount / rounds, sorted[rounds / 2], sorted[0], sorted[rounds - 1], delivered))
print("states after: \(engine.stateCount), resident MB: \(residentBytes() / 1_000_000)")
let c = engine.counters
print(
    "counters: woken on budget \(c.wokenOnBudget), held \(c.held), released on alert \(c.releasedOnAlert), on keep-alive \(c.releasedOnKeepAlive), completed \(c.completedNewData), late \(c.completedLate), deadline misses \(c.deadlinePenalties)"
)

// The hub's stall check (once a second, under the hub's lock): a node's connected devices, of which a
// few have a push written and not yet acknowledged; how long one check takes.
for connected in [17_000, 100_000] {
    var queues = DeliveryQueues(window: 8, limit: 100)
    var writes: [Outgoing] = []
    for device in 0..<connected { queues.connected(DeviceSlot(device), now: start, into: &writes) }
    // One device in a thousand has a push in flight (a node delivering about 1,000 a second, each
    // acknowledged within a millisecond or so, has a handful at any instant).
    for device in stride(from: 0, to: connected, by: 1000) {
        queues.enqueue(
            Outgoing(push: push(device, .alerting, at: start, random: &random), rule: .alerting, wake: false),
            for: DeviceSlot(device), now: start, into: &writes)
    }
    let checks = 200
    var found = 0
    let elapsed = clock.measure {
        for check in 0..<checks {
            found &+= queues.stalled(now: start.adding(seconds: Int64(check)), timeoutMilliseconds: 30_000).count
        }
    }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    print(
        String(
            format: "stall check, %d connected devices (%d with a push in flight): %.1f µs a check (%d found)",
            connected, (connected + 999) / 1000, seconds / Double(checks) * 1e6, found))
}
