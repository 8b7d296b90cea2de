import PushModel
import PushPolicy
import PushStore

/// The registry's answers the core needs while it decides (each read under the registry's own lock).
struct HubDirectory: Sendable {
    /// The device a token belongs to.
    var slot: @Sendable (DeviceToken) -> DeviceSlot?
    /// A device's id, as the store names it.
    var deviceID: @Sendable (DeviceSlot) -> String?
}

/// What one event decided, for the hub to carry out after unlocking: the writes to make (the event's
/// own first, then what the policy's deliveries let through), and the sequence of the store change it
/// posted, if any (the hub hands it to the writer).
struct HubOutcome {
    var writes: [HubWrite]
    var posted: UInt64?

    static let refused = HubOutcome(writes: [], posted: nil)
}

extension HubState {
    /// The rest of one event once the policy has decided its `actions` (the event itself ran on this
    /// core and made `writes`): the deliveries among the actions go to their devices' queues (to
    /// `device`, or the device of each push's token) and what the windows let through is written; with
    /// a store (`stores`), what was decided — the new notification, what became of other pushes, the
    /// changed budgets — is posted as one change, in decision order. A push that is not `new` is already
    /// stored (another node accepted it): what the policy decided for it is posted as an outcome. A new
    /// push's delivery waits for the commit that answers its provider (`settled`) when someone waits for
    /// it (`answer`).
    mutating func decided(
        _ actions: [PolicyAction], writes: [HubWrite], now: UnixTime, device: DeviceSlot?,
        inserting: (push: PushNotification, device: DeviceSlot, new: Bool)?, answer: Answer?, stores: Bool,
        directory: HubDirectory
    ) -> HubOutcome {
        var writes = writes
        let unstored = stores && answer != nil && inserting?.new == true ? inserting?.push.id : nil
        route(actions, device: device, now: now, slot: directory.slot, unstored: unstored, writes: &writes)
        noteResends(writes, now: now)
        guard stores else { return HubOutcome(writes: writes, posted: nil) }
        var budgets: [String: [AppBudget]] = [:]
        var pruned: Set<String> = []
        let changed = policy.takeChangedDevices()
        for device in changed.devices {
            guard let id = directory.deviceID(device) else { continue }
            budgets[id] = policy.budgets(of: device).map { AppBudget(bundleID: $0.bundleID, budget: $0.budget) }
            if changed.pruned.contains(device) { pruned.insert(id) }
        }
        let stored = inserting.map {
            Self.stored($0.push, deviceID: directory.deviceID($0.device), actions, settings: policy.settings)
        }
        let (insert, outcomes) = Self.storeChange(actions, decided: stored, new: inserting?.new ?? true, now: now)
        guard insert != nil || !outcomes.isEmpty || !budgets.isEmpty || answer != nil else {
            return HubOutcome(writes: writes, posted: nil)
        }
        let sequence = post(
            StoreChange(inserting: insert, outcomes: outcomes, budgets: budgets, budgetsPruned: pruned, answer: answer))
        return HubOutcome(writes: writes, posted: sequence)
    }

    /// What the store records of a decision, as a pure function of it: the new notification (or, for one
    /// another node stored, its outcome), and what became of other pushes — discarded, released (pending
    /// with the release rule until acknowledged), held.
    static func storeChange(
        _ actions: [PolicyAction], decided: StoredNotification?, new: Bool, now: UnixTime
    ) -> (inserting: StoredNotification?, outcomes: [NotificationOutcome]) {
        var outcomes: [NotificationOutcome] = []
        var inserting: StoredNotification?
        if let decided {
            if new {
                inserting = decided
            } else {
                outcomes.append(
                    NotificationOutcome(
                        apnsID: decided.notification.id, state: decided.state, rule: decided.rule, at: now))
            }
        }
        let decidedID = decided?.notification.id
        for action in actions {
            switch action {
            case .discard(let id, let rule) where id != decidedID:
                outcomes.append(NotificationOutcome(apnsID: id, state: .discarded, rule: rule, at: now))
            case .deliver(let push, let rule, _) where rule.isRelease && push.id != decidedID:
                outcomes.append(NotificationOutcome(apnsID: push.id, state: .pending, rule: rule, at: now))
            case .hold(let id, let rule) where id != decidedID:
                outcomes.append(NotificationOutcome(apnsID: id, state: .pending, rule: rule, at: now))
            default:
                continue
            }
        }
        return (inserting, outcomes)
    }

    /// A new notification as the store keeps it, with what the policy decided for it.
    static func stored(
        _ push: PushNotification, deviceID: String?, _ actions: [PolicyAction], settings: PolicySettings
    ) -> StoredNotification {
        var state = NotificationState.pending
        var rule: Rule?
        for action in actions {
            switch action {
            case .deliver(let delivered, let decided, _) where delivered === push: rule = decided
            case .hold(push.id, let decided): rule = decided
            case .discard(push.id, let decided):
                state = .discarded
                rule = decided
            default: continue
            }
        }
        return StoredNotification(
            notification: push, expiresAt: settings.expiry(of: push), deviceID: deviceID, state: state, rule: rule)
    }
}
