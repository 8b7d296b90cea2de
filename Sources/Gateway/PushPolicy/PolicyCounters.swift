import PushModel

/// The policy's counters, in one place (the metrics issue exports them).
public struct PolicyCounters: Sendable, Equatable, Codable {
    public var silentAccepted = 0
    public var alertingAccepted = 0
    public var otherAccepted = 0
    public var wokenOnBudget = 0
    public var held = 0
    /// Of `held`: kept for a device that was unreachable (the rest: power considerations).
    public var heldOffline = 0
    public var releasedOnAlert = 0
    public var releasedOnKeepAlive = 0
    public var releasedOnReconnect = 0
    public var releasedOnAppOpened = 0
    public var releasedOnConditionEnded = 0
    public var deliveredImmediately = 0
    /// Priority-10 Live Activity updates delivered on their activity's budget.
    public var liveActivityOnBudget = 0
    /// Live Activity updates held for the next delivery window: priority 10 over budget, and priority 5.
    public var liveActivityOverBudget = 0
    public var liveActivityOpportunistic = 0
    public var coalesced = 0
    public var overflowed = 0
    public var expired = 0
    public var notStored = 0
    /// Held pushes discarded because their app was uninstalled.
    public var unregistered = 0
    public var completedNewData = 0
    public var completedNoData = 0
    public var completedFailed = 0
    public var completedLate = 0
    public var deadlinePenalties = 0
    /// Wakes the device did not run (force-quit, a condition the gateway had not heard of, no silent
    /// notifications on its iOS): forgotten without a penalty.
    public var notWoken = 0
    /// Pushes held at this moment (a gauge: holds minus releases and discards of held pushes).
    public var heldNow = 0
    /// Holds by their reason (`held_over_budget`, `held_device_budget`, `held_thundering_herd`, …).
    public var heldBy = HeldCounts()
    /// Silent pushes woken for a device with a debugger attached (no throttle).
    public var wokenDebuggerAttached = 0

    /// Every counter but `heldBy` (the admin API's counters are plain numbers; `/metrics` has the reasons).
    enum CodingKeys: String, CodingKey {
        case silentAccepted, alertingAccepted, otherAccepted, wokenOnBudget, held, heldOffline
        case releasedOnAlert, releasedOnKeepAlive, releasedOnReconnect, releasedOnAppOpened
        case releasedOnConditionEnded, deliveredImmediately, liveActivityOnBudget, liveActivityOverBudget
        case liveActivityOpportunistic, coalesced, overflowed, expired, notStored, unregistered
        case completedNewData, completedNoData, completedFailed, completedLate, deadlinePenalties, notWoken
        case heldNow, wokenDebuggerAttached
    }

    public init() {}

    /// Pushes the policy took in, of every class.
    public var acceptedTotal: Int { alertingAccepted + silentAccepted + otherAccepted }

    mutating func accepted(_ kind: NotificationClass) {
        switch kind {
        case .silent: silentAccepted += 1
        case .alerting: alertingAccepted += 1
        case .other: otherAccepted += 1
        }
    }

    mutating func count(_ action: PolicyAction) {
        switch action {
        case .deliver(_, let rule, _):
            switch rule {
            case .onBudget: wokenOnBudget += 1
            case .debuggerAttached: wokenDebuggerAttached += 1
            case .liveActivityOnBudget: liveActivityOnBudget += 1
            case .piggybackAlert: releasedOnAlert += 1
            case .piggybackKeepAlive: releasedOnKeepAlive += 1
            case .reconnect: releasedOnReconnect += 1
            case .appOpened: releasedOnAppOpened += 1
            case .conditionEnded: releasedOnConditionEnded += 1
            default: deliveredImmediately += 1
            }
            if rule.isRelease { heldNow -= 1 }
        case .hold(_, let rule):
            held += 1
            heldBy[rule] += 1
            if rule == .offline { heldOffline += 1 }
            if rule == .liveActivityOverBudget { liveActivityOverBudget += 1 }
            if rule == .opportunistic { liveActivityOpportunistic += 1 }
            heldNow += 1
        case .discard(_, let rule):
            switch rule {
            case .coalescedCollapseID, .coalescedNewest: coalesced += 1
            case .overflow: overflowed += 1
            case .notStoredExpirationZero: notStored += 1
            case .tokenUnregistered: unregistered += 1
            default: expired += 1
            }
            if rule != .notStoredExpirationZero, rule != .expiredOnArrival { heldNow -= 1 }
        case .completed(_, let result):
            switch result {
            case .newData: completedNewData += 1
            case .noData: completedNoData += 1
            case .failed: completedFailed += 1
            }
        case .completedLate: completedLate += 1
        case .deadlineMissed: deadlinePenalties += 1
        case .notWoken: notWoken += 1
        }
    }
}

/// A count per held reason, in a fixed array (counted on the request path: no hashing).
public struct HeldCounts: Sendable, Equatable, Codable {
    private var counts = [Int](repeating: 0, count: Rule.heldReasons.count)

    public init() {}

    public subscript(rule: Rule) -> Int {
        get { rule.heldIndex.map { counts[$0] } ?? 0 }
        set { if let index = rule.heldIndex { counts[index] = newValue } }
    }
}

extension Rule {
    /// Every reason to hold a push, in one order (the metrics' `reason` label values).
    public static let heldReasons: [Rule] = allCases.filter(\.isHeld)

    /// This rule's place in `heldReasons`, nil for a rule that holds nothing.
    var heldIndex: Int? {
        switch self {
        case .overBudget: 0
        case .forceQuit: 1
        case .lowPowerMode: 2
        case .backgroundAppRefreshOff: 3
        case .offline: 4
        case .lowPriority: 5
        case .deferredPowerSaving: 6
        case .liveActivityOverBudget: 7
        case .opportunistic: 8
        case .deviceBudget: 9
        case .thunderingHerd: 10
        case .appInactive: 11
        case .reloadBudget: 12
        default: nil
        }
    }
}
