import DeviceRuntime
import PushModel

/// A device runtime driven with plain instants: events at the rig's time, `advance` ticks through every
/// deadline on the way (as the shell's timer would).
struct Rig {
    var runtime: DeviceRuntime
    var now = UnixTime(seconds: 1_800_000_000)
    /// Every action so far.
    var log: [RuntimeAction] = []

    init(_ profile: IOSProfile, _ behaviour: AppBehaviour = AppBehaviour(), apps: [String] = ["com.example.news"]) {
        runtime = DeviceRuntime(
            profile: profile, apps: apps.map { ($0, behaviour) }, seed: 7, now: UnixTime(seconds: 1_800_000_000))
    }

    @discardableResult
    mutating func send(_ event: RuntimeEvent) -> [RuntimeAction] {
        let actions = runtime.handle(event, at: now)
        log += actions
        return actions
    }

    @discardableResult
    mutating func advance(seconds: Double) -> [RuntimeAction] {
        let target = now.adding(milliseconds: Int64(seconds * 1000))
        var actions: [RuntimeAction] = []
        while let due = runtime.nextDeadline(), due <= target {
            now = max(now, due)
            actions += runtime.handle(.tick, at: now)
        }
        now = target
        actions += runtime.handle(.tick, at: now)
        log += actions
        return actions
    }

    /// The transfers started, in order.
    func started(_ actions: [RuntimeAction]? = nil) -> [TransferRequest] {
        (actions ?? log).compactMap { if case .startTransfer(let request) = $0 { request } else { nil } }
    }

    func states(_ actions: [RuntimeAction]) -> [AppState] {
        actions.compactMap { if case .appState(_, let state) = $0 { state } else { nil } }
    }

    func terminations(_ actions: [RuntimeAction]? = nil) -> [TerminationCause] {
        (actions ?? log).compactMap { if case .terminated(_, let cause) = $0 { cause } else { nil } }
    }

    func completions(_ actions: [RuntimeAction]? = nil) -> [CompletionResult] {
        (actions ?? log).compactMap { if case .complete(_, _, let result) = $0 { result } else { nil } }
    }

    var app: AppRuntime { runtime.apps["com.example.news"]! }
}

extension AppBehaviour {
    static func with(_ change: (inout AppBehaviour) -> Void) -> AppBehaviour {
        var behaviour = AppBehaviour()
        change(&behaviour)
        return behaviour
    }
}

/// Push ids for the tests, by letter.
extension APNsID {
    static let a = APNsID(high: 0, low: 0xA)
    static let b = APNsID(high: 0, low: 0xB)
    static let c = APNsID(high: 0, low: 0xC)
    static let x = APNsID(high: 0, low: 0x10)
    static let y = APNsID(high: 0, low: 0x11)
}
