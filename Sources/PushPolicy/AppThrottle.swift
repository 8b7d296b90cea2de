import Foundation
import PushModel

/// The silent-push policy for one (device, app), as a pure state machine: each event is a `mutating`
/// method that takes the time and the device's conditions and appends the actions to carry out.
/// Nothing here reads a clock or does I/O.
///
/// State: the silent budget (a token bucket whose refill slows while the app is cooling off after a
/// missed deadline), misbehaviour strikes, the pushes held for later, and the background wakes
/// awaiting their completion.
public struct AppThrottle: Sendable, Equatable {
    /// Tokens in the silent budget; `nil` until the first event (a full bucket).
    private(set) var tokens: Double?
    private(set) var tokensAt: UnixTime = UnixTime(milliseconds: 0)
    private(set) var strikes: Double = 0
    private(set) var strikesAt: UnixTime = UnixTime(milliseconds: 0)
    private(set) var coolingUntil: UnixTime = UnixTime(milliseconds: 0)
    public private(set) var appState: AppState = .background
    public private(set) var held: [HeldPush] = []
    private(set) var awaiting: [AwaitingCompletion] = []
    /// Wakes whose deadline passed recently, so a late completion is recognised as late, not unknown.
    private(set) var recentlyMissed: [APNsID] = []

    struct AwaitingCompletion: Sendable, Equatable {
        var id: APNsID
        var deadline: UnixTime
    }

    /// Pushes beyond this many held for one app are discarded oldest first, whatever the storage mode.
    public static let maximumHeld = 100
    static let recentlyMissedKept = 8

    public init() {}

    // MARK: Events

    /// A notification for this app was accepted by the provider API.
    public mutating func received(
        _ push: PushNotification, conditions: DeviceConditions, settings: PolicySettings, now: UnixTime,
        into actions: inout [PolicyAction]
    ) {
        let expiresAt = Self.expiry(of: push, settings: settings)
        if let expiresAt, expiresAt < now {
            actions.append(.discard(push.id, rule: .expired))
            return
        }
        guard conditions.online else { return keep(push, expiresAt, .offline, conditions, settings, now, &actions) }

        switch push.notificationClass {
        case .silent:
            if let blocked = silentWakeBlocked(conditions) {
                return keep(push, expiresAt, blocked, conditions, settings, now, &actions)
            }
            if push.priority == .low { return keep(push, expiresAt, .lowPriority, conditions, settings, now, &actions) }
            if takeToken(settings: settings, now: now) {
                wake(push, rule: .onBudget, settings: settings, now: now, into: &actions)
            } else {
                keep(push, expiresAt, .overBudget, conditions, settings, now, &actions)
            }
        case .alerting:
            if push.priority == .low { return keep(push, expiresAt, .lowPriority, conditions, settings, now, &actions) }
            if push.priority == .conservePower, conditions.savingPower {
                return keep(push, expiresAt, .deferredPowerSaving, conditions, settings, now, &actions)
            }
            actions.append(.deliver(push, rule: .alerting, wake: false))
            release(carrier: .alert, conditions: conditions, settings: settings, now: now, into: &actions)
        case .other:
            if push.priority == .low { return keep(push, expiresAt, .lowPriority, conditions, settings, now, &actions) }
            actions.append(.deliver(push, rule: .immediate, wake: false))
        }
    }

    /// A delivery window opened on the device (an alert to another app, a keep-alive, a reconnect):
    /// held pushes that may go now ride along without spending budget.
    public mutating func release(
        carrier: Carrier, conditions: DeviceConditions, settings: PolicySettings, now: UnixTime,
        into actions: inout [PolicyAction]
    ) {
        guard conditions.online, !held.isEmpty else { return }
        let silentAllowed = silentWakeBlocked(conditions) == nil
        var kept: [HeldPush] = []
        for entry in held {
            if let expiresAt = entry.expiresAt, expiresAt < now {
                actions.append(.discard(entry.notification.id, rule: .expired))
            } else if entry.isSilent {
                if silentAllowed {
                    wake(entry.notification, rule: carrier.rule, settings: settings, now: now, into: &actions)
                } else {
                    kept.append(entry)
                }
            } else {
                actions.append(.deliver(entry.notification, rule: carrier.rule, wake: false))
            }
        }
        held = kept
    }

    /// The app's state changed. Opening a force-quit app (foreground) releases what it held.
    public mutating func appStateChanged(
        to state: AppState, conditions: DeviceConditions, settings: PolicySettings, now: UnixTime,
        into actions: inout [PolicyAction]
    ) {
        let previous = appState
        appState = state
        if previous == .forceQuit, state == .foreground {
            release(carrier: .appOpened, conditions: conditions, settings: settings, now: now, into: &actions)
        }
    }

    /// The app answered a background wake.
    public mutating func completed(
        _ id: APNsID, result: CompletionResult, settings: PolicySettings, now: UnixTime,
        into actions: inout [PolicyAction]
    ) {
        if let index = awaiting.firstIndex(where: { $0.id == id }) {
            let wake = awaiting.remove(at: index)
            if now <= wake.deadline {
                actions.append(.completed(id, result))
                addStrikes(
                    -relief(for: result, settings) + (result == .failed ? settings.failedStrike : 0), settings, now)
                return
            }
            // The deadline passed but its timer has not fired yet: the miss comes first, then the late answer.
            missed(wake.id, settings: settings, now: now, into: &actions)
            actions.append(.completedLate(id, result))
        } else if recentlyMissed.contains(id) {
            recentlyMissed.removeAll { $0 == id }
            actions.append(.completedLate(id, result))
        }
        // Anything else is a completion for a wake this app never had: nothing to do.
    }

    /// Time passed: deadlines that ran out, held pushes that expired.
    public mutating func advance(settings: PolicySettings, now: UnixTime, into actions: inout [PolicyAction]) {
        if awaiting.contains(where: { $0.deadline < now }) {
            let due = awaiting.filter { $0.deadline < now }
            awaiting.removeAll { $0.deadline < now }
            for wake in due { missed(wake.id, settings: settings, now: now, into: &actions) }
        }
        if held.contains(where: { ($0.expiresAt.map { $0 < now }) ?? false }) {
            held.removeAll { entry in
                guard let expiresAt = entry.expiresAt, expiresAt < now else { return false }
                actions.append(.discard(entry.notification.id, rule: .expired))
                return true
            }
        }
    }

    /// When `advance` next has something to do.
    public var nextDeadline: UnixTime? {
        let deadlines = awaiting.map { $0.deadline.adding(milliseconds: 1) }
        let expiries = held.compactMap { $0.expiresAt?.adding(milliseconds: 1) }
        return (deadlines + expiries).min()
    }

    // MARK: Reading

    /// The budget at `now`, for lookups (Apple keeps this opaque; developers ask for it constantly).
    public func snapshot(settings: PolicySettings, now: UnixTime) -> AppThrottleSnapshot {
        var copy = self
        copy.refill(settings: settings, now: now)
        copy.decayStrikes(settings, now)
        let tokens = copy.tokens ?? Double(settings.budgetCapacity)
        var nextRefill: UnixTime?
        if tokens < Double(settings.budgetCapacity) {
            let missing = 1 - (tokens - tokens.rounded(.down))
            nextRefill = now.adding(milliseconds: Int64((missing * copy.refillInterval(settings, now)).rounded(.up)))
        }
        return AppThrottleSnapshot(
            budgetLeft: Int(tokens.rounded(.down)), budgetCapacity: settings.budgetCapacity, nextRefill: nextRefill,
            held: held.map { HeldSummary(id: $0.notification.id, rule: $0.rule, expiresAt: $0.expiresAt) },
            strikes: copy.strikes, coolingUntil: coolingUntil > now ? coolingUntil : nil,
            awaitingCompletion: awaiting.map(\.id), appState: appState)
    }

    /// Whether this state carries nothing worth keeping (a full bucket, no strikes, nothing pending).
    public func isIdle(settings: PolicySettings, now: UnixTime) -> Bool {
        held.isEmpty && awaiting.isEmpty && recentlyMissed.isEmpty && appState != .forceQuit && coolingUntil <= now
            && strikes < 0.01
            && (tokens == nil || snapshot(settings: settings, now: now).budgetLeft >= settings.budgetCapacity)
    }

    // MARK: Rules

    private func silentWakeBlocked(_ conditions: DeviceConditions) -> Rule? {
        if appState == .forceQuit { return .forceQuit }
        if conditions.lowPowerMode { return .lowPowerMode }
        if conditions.backgroundAppRefreshOff { return .backgroundAppRefreshOff }
        return nil
    }

    private mutating func wake(
        _ push: PushNotification, rule: Rule, settings: PolicySettings, now: UnixTime,
        into actions: inout [PolicyAction]
    ) {
        awaiting.append(
            AwaitingCompletion(id: push.id, deadline: now.adding(seconds: settings.completionDeadlineSeconds)))
        actions.append(.deliver(push, rule: rule, wake: true))
    }

    /// Holds a push for later, as storage allows: a collapse id replaces its namesake; newest-only keeps
    /// one silent push (one push of any kind for an offline device, as APNs does); `expiration: 0` is
    /// never stored.
    private mutating func keep(
        _ push: PushNotification, _ expiresAt: UnixTime?, _ rule: Rule, _ conditions: DeviceConditions,
        _ settings: PolicySettings, _ now: UnixTime, _ actions: inout [PolicyAction]
    ) {
        if push.expiration == .immediateOnly {
            actions.append(.discard(push.id, rule: .notStoredExpirationZero))
            return
        }
        if let collapseID = push.collapseID {
            held.removeAll { entry in
                guard entry.notification.collapseID == collapseID else { return false }
                actions.append(.discard(entry.notification.id, rule: .coalescedCollapseID))
                return true
            }
        }
        if settings.heldStorage == .newestOnly {
            let offline = !conditions.online
            held.removeAll { entry in
                guard offline || (push.notificationClass == .silent && entry.isSilent) else { return false }
                actions.append(.discard(entry.notification.id, rule: .coalescedNewest))
                return true
            }
        }
        let limit =
            settings.heldStorage == .newestOnly ? Self.maximumHeld : min(settings.heldStorage.limit, Self.maximumHeld)
        while held.count >= limit {
            actions.append(.discard(held.removeFirst().notification.id, rule: .overflow))
        }
        held.append(HeldPush(notification: push, expiresAt: expiresAt, rule: rule))
        actions.append(.hold(push.id, rule: rule))
    }

    static func expiry(of push: PushNotification, settings: PolicySettings) -> UnixTime? {
        switch push.expiration {
        case .immediateOnly: return nil
        case .storeByDefault: return push.receivedAt.adding(seconds: settings.defaultStorageSeconds)
        case .at(let seconds): return UnixTime(seconds: seconds)
        }
    }

    // MARK: Budget and strikes

    private mutating func takeToken(settings: PolicySettings, now: UnixTime) -> Bool {
        refill(settings: settings, now: now)
        guard let available = tokens, available >= 1 else { return false }
        tokens = available - 1
        return true
    }

    /// Refills the bucket up to `now`: slower while cooling off, at the normal rate after.
    private mutating func refill(settings: PolicySettings, now: UnixTime) {
        let capacity = Double(settings.budgetCapacity)
        guard let current = tokens else {
            tokens = capacity
            tokensAt = now
            return
        }
        guard now > tokensAt else { return }
        var gained = 0.0
        let base = settings.refillIntervalMilliseconds
        if tokensAt < coolingUntil {
            let coolingEnd = min(now, coolingUntil)
            gained += Double(coolingEnd.milliseconds - tokensAt.milliseconds) / (base * settings.coolingSlowdown)
            if now > coolingUntil { gained += Double(now.milliseconds - coolingUntil.milliseconds) / base }
        } else {
            gained = Double(now.milliseconds - tokensAt.milliseconds) / base
        }
        tokens = min(capacity, current + gained)
        tokensAt = now
    }

    private func refillInterval(_ settings: PolicySettings, _ now: UnixTime) -> Double {
        now < coolingUntil
            ? settings.refillIntervalMilliseconds * settings.coolingSlowdown : settings.refillIntervalMilliseconds
    }

    private func relief(for result: CompletionResult, _ settings: PolicySettings) -> Double {
        switch result {
        case .newData: return settings.newDataRelief
        case .noData: return settings.noDataRelief
        case .failed: return 0
        }
    }

    private mutating func decayStrikes(_ settings: PolicySettings, _ now: UnixTime) {
        guard strikes > 0, now > strikesAt, settings.strikeHalfLifeSeconds > 0 else {
            strikesAt = max(strikesAt, now)
            return
        }
        let halfLives =
            Double(now.milliseconds - strikesAt.milliseconds) / Double(settings.strikeHalfLifeSeconds * 1000)
        strikes *= pow2(-halfLives)
        if strikes < 0.001 { strikes = 0 }
        strikesAt = now
    }

    private mutating func addStrikes(_ amount: Double, _ settings: PolicySettings, _ now: UnixTime) {
        decayStrikes(settings, now)
        strikes = max(0, strikes + amount)
    }

    /// A wake's deadline passed: the app was terminated. Its bucket empties and refills slowly for a
    /// cooling period that doubles with each strike.
    private mutating func missed(
        _ id: APNsID, settings: PolicySettings, now: UnixTime, into actions: inout [PolicyAction]
    ) {
        actions.append(.deadlineMissed(id))
        recentlyMissed.append(id)
        if recentlyMissed.count > Self.recentlyMissedKept { recentlyMissed.removeFirst() }
        refill(settings: settings, now: now)
        addStrikes(settings.missStrike, settings, now)
        tokens = 0
        let cooling = Double(settings.coolingBaseSeconds) * pow2(max(0, strikes - 1))
        let seconds = Int64(min(Double(settings.coolingMaxSeconds), cooling))
        coolingUntil = max(coolingUntil, now.adding(seconds: seconds))
    }
}

@inline(__always)
func pow2(_ x: Double) -> Double { exp2(x) }

/// A (device, app)'s policy state as a lookup shows it.
public struct AppThrottleSnapshot: Sendable, Equatable, Codable {
    public var budgetLeft: Int
    public var budgetCapacity: Int
    public var nextRefill: UnixTime?
    public var held: [HeldSummary]
    public var strikes: Double
    public var coolingUntil: UnixTime?
    public var awaitingCompletion: [APNsID]
    public var appState: AppState
}

public struct HeldSummary: Sendable, Equatable, Codable {
    public var id: APNsID
    public var rule: Rule
    public var expiresAt: UnixTime?
}
