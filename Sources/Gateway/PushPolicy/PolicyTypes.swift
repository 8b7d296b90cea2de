import PushModel

/// Device-wide conditions that stop (or free) silent wakes for every app.
public struct DeviceConditions: Sendable, Equatable {
    public var online: Bool
    public var lowPowerMode: Bool
    public var backgroundAppRefreshOff: Bool
    /// A debugger is attached to the device's app (Xcode): the throttle is off — no budget, no herd
    /// window, no inactivity rule (DTS, forum thread 776933: "a best-case scenario").
    public var debuggerAttached: Bool
    /// The device rebooted: until then its silent wakes wait (dasd's ThunderingHerdPolicy).
    public var herdUntil: UnixTime?
    /// Wakes the device-wide daily budget allows now (`Int.max` when it does not apply); the engine
    /// fills it in for each decision.
    public var wakesLeft: Int

    public init(
        online: Bool = true, lowPowerMode: Bool = false, backgroundAppRefreshOff: Bool = false,
        debuggerAttached: Bool = false, herdUntil: UnixTime? = nil, wakesLeft: Int = .max
    ) {
        self.online = online
        self.lowPowerMode = lowPowerMode
        self.backgroundAppRefreshOff = backgroundAppRefreshOff
        self.debuggerAttached = debuggerAttached
        self.herdUntil = herdUntil
        self.wakesLeft = wakesLeft
    }

    /// Whether the device saves power (priority-5 alerts wait for the next delivery window).
    var savingPower: Bool { lowPowerMode }
}

/// Why the policy decided what it did: the decision log's "rule".
public enum Rule: String, Sendable, Codable, CaseIterable {
    // delivered now
    case alerting = "alerting"
    case immediate = "immediate"
    case onBudget = "on_budget"
    /// A silent push to a device with a debugger attached: no throttle.
    case debuggerAttached = "woken_debugger_attached"
    /// A widget or control push within its app's daily reload budget.
    case reloadOnBudget = "reload_on_budget"
    /// A priority-10 Live Activity update within its activity's budget.
    case liveActivityOnBudget = "live_activity_on_budget"
    /// A channel's broadcast, written to a subscriber connected when it was broadcast.
    case broadcast = "broadcast"
    // held
    case overBudget = "held_over_budget"
    case forceQuit = "held_force_quit"
    case lowPowerMode = "held_low_power_mode"
    case backgroundAppRefreshOff = "held_background_app_refresh_off"
    case offline = "held_offline"
    case lowPriority = "held_low_priority"
    case deferredPowerSaving = "deferred_power_saving"
    /// A priority-10 Live Activity update over its activity's budget: degraded to opportunistic delivery.
    case liveActivityOverBudget = "held_live_activity_over_budget"
    /// A priority-5 Live Activity update: outside the budget, delivered with the device's next window.
    case opportunistic = "held_opportunistic"
    /// The device-wide daily budget is spent (dasd's EnergyBudgetPolicy and DataBudgetPolicy): waits for
    /// its reset, then a delivery window.
    case deviceBudget = "held_device_budget"
    /// The device rebooted moments ago (dasd's ThunderingHerdPolicy): waits out the herd window.
    case thunderingHerd = "held_thundering_herd"
    /// The user has not launched the app for `policy.inactive_app_days`: waits for a launch.
    case appInactive = "held_app_inactive"
    /// A widget or control push past its app's daily reload budget: the newest waits for the budget's
    /// next window, then a delivery window.
    case reloadBudget = "held_reload_budget"
    // released
    case piggybackAlert = "released_piggyback_alert"
    case piggybackKeepAlive = "released_piggyback_keep_alive"
    case reconnect = "released_on_reconnect"
    case appOpened = "released_app_opened"
    case conditionEnded = "released_condition_ended"
    /// A channel's newest broadcast, given to a subscriber that connected (again, or to another node)
    /// or subscribed after it.
    case broadcastCaughtUp = "released_broadcast_caught_up"
    // discarded
    case coalescedCollapseID = "coalesced_collapse_id"
    case coalescedNewest = "coalesced_newer_push"
    case overflow = "discarded_overflow"
    case expired = "expired"
    /// Past its expiration when it reached the policy (never held).
    case expiredOnArrival = "expired_on_arrival"
    case notStoredExpirationZero = "not_stored_expiration_zero"
    /// The app was uninstalled (its token unregistered) while the push was held.
    case tokenUnregistered = "discarded_token_unregistered"

    /// A decision to deliver (now or as a release): the push is the device's until it acknowledges it,
    /// and a restart or a node change sends it again rather than holding or coalescing it.
    public var isDelivery: Bool {
        switch self {
        case .alerting, .immediate, .onBudget, .debuggerAttached, .reloadOnBudget, .liveActivityOnBudget, .broadcast:
            return true
        default: return isRelease
        }
    }

    /// A decision to keep the push for later.
    public var isHeld: Bool {
        switch self {
        case .overBudget, .forceQuit, .lowPowerMode, .backgroundAppRefreshOff, .offline, .lowPriority,
            .deferredPowerSaving, .liveActivityOverBudget, .opportunistic, .deviceBudget, .thunderingHerd, .appInactive,
            .reloadBudget:
            return true
        default: return false
        }
    }

    /// A decision to throw the push away.
    public var isDiscard: Bool {
        switch self {
        case .coalescedCollapseID, .coalescedNewest, .overflow, .expired, .expiredOnArrival, .notStoredExpirationZero,
            .tokenUnregistered:
            return true
        default: return false
        }
    }

    /// A delivery of a held push (with something that opened a delivery window).
    public var isRelease: Bool {
        switch self {
        case .piggybackAlert, .piggybackKeepAlive, .reconnect, .appOpened, .conditionEnded, .broadcastCaughtUp:
            return true
        default: return false
        }
    }
}

/// What carried a release of held pushes.
public enum Carrier: String, Sendable, Codable {
    case alert
    case keepAlive = "keep_alive"
    case reconnect
    case appOpened = "app_opened"
    case conditionEnded = "condition_ended"

    var rule: Rule {
        switch self {
        case .alert: return .piggybackAlert
        case .keepAlive: return .piggybackKeepAlive
        case .reconnect: return .reconnect
        case .appOpened: return .appOpened
        case .conditionEnded: return .conditionEnded
        }
    }
}

/// What the I/O shell must do, in order.
public enum PolicyAction: Sendable, Equatable {
    /// Deliver to the device now. `wake` says whether it is a background wake with a completion deadline.
    case deliver(PushNotification, rule: Rule, wake: Bool)
    /// Keep it; nothing to send.
    case hold(APNsID, rule: Rule)
    /// Throw it away, counted under `rule` (expired, coalesced, overflow, not stored).
    case discard(APNsID, rule: Rule)
    /// The app answered in time.
    case completed(APNsID, CompletionResult)
    /// The app answered after its deadline had passed (it was already counted as terminated).
    case completedLate(APNsID, CompletionResult)
    /// The deadline passed without an answer: the app was terminated and penalised.
    case deadlineMissed(APNsID)
    /// The device did not wake the app for this wake (`WakeRefusal`): forgotten, no deadline, no penalty.
    case notWoken(APNsID, WakeRefusal)
}

/// A push the policy keeps for later.
public struct HeldPush: Sendable, Equatable {
    public var notification: PushNotification
    public var expiresAt: UnixTime?
    public var rule: Rule

    public init(notification: PushNotification, expiresAt: UnixTime?, rule: Rule) {
        self.notification = notification
        self.expiresAt = expiresAt
        self.rule = rule
    }

    var isSilent: Bool { notification.notificationClass == .silent }
}
