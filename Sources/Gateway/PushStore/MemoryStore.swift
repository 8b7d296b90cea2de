import PushModel
import PushPolicy
import Synchronization

/// The store in memory: for tests and `--ephemeral` runs. It keeps what a durable store keeps (a new
/// gateway given the same instance restores from it) but nothing survives the process.
public final class MemoryStore: StoreBackend {
    public let kind = "memory"

    struct Row {
        var stored: StoredNotification
        var finishedAt: UnixTime?
    }

    struct Key: Hashable {
        var team: String
        var id: APNsID
    }

    private struct State {
        var devices: [StoredDevice] = []
        var deviceIndex: [String: Int] = [:]
        var tokens: [String: StoredToken] = [:]
        var tokenOrder: [String] = []
        var channels: [String: StoredChannel] = [:]
        var channelOrder: [String] = []
        var rows: [Key: Row] = [:]
        /// Insertion order (keys may have been pruned).
        var order: [Key] = []
        var byID: [APNsID: [Key]] = [:]
        var budgets: [String: DeviceBudgets] = [:]
        var subscriptions: [SubscriptionKey: StoredSubscription] = [:]
        /// Each channel's newest broadcast (the only one a device coming back is given).
        var broadcasts: [String: StoredBroadcast] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    public func open(now: UnixTime) async throws -> StoreSnapshot {
        state.withLock { state in
            _ = Self.expire(&state, now: now, atStart: true)
            var snapshot = StoreSnapshot()
            snapshot.devices = state.devices
            snapshot.tokens = state.tokenOrder.compactMap { state.tokens[$0] }
            snapshot.channels = state.channelOrder.compactMap { state.channels[$0] }
            // As the SQL backends give them: every device's, ordered by device id.
            snapshot.budgets = state.budgets.keys.sorted().compactMap { state.budgets[$0] }
            snapshot.pending = state.order.compactMap { key in
                guard let row = state.rows[key], row.stored.state == .pending else { return nil }
                return row.stored
            }
            snapshot.subscriptions = state.subscriptions.keys.sorted().compactMap { state.subscriptions[$0] }
            snapshot.broadcasts = state.broadcasts.keys.sorted().compactMap { state.broadcasts[$0] }
                .filter { $0.deliverableUntil >= now }
            return snapshot
        }
    }

    public func commit(_ batch: StoreBatch) async throws {
        state.withLock { state in
            for device in batch.devices where state.deviceIndex[device.id] == nil {
                state.deviceIndex[device.id] = state.devices.count
                state.devices.append(device)
            }
            for (id, at) in batch.seen {
                if let index = state.deviceIndex[id] { state.devices[index].lastSeenAt = at }
            }
            for (id, at) in batch.removed {
                if let index = state.deviceIndex[id] { state.devices[index].removedAt = at }
            }
            for token in batch.tokens {
                if state.tokens.updateValue(token, forKey: token.token) == nil { state.tokenOrder.append(token.token) }
            }
            for channel in batch.channels {
                if state.channels.updateValue(channel, forKey: channel.id) == nil {
                    state.channelOrder.append(channel.id)
                }
            }
            for stored in batch.notifications {
                let key = Key(team: stored.notification.teamID ?? "", id: stored.notification.id)
                guard state.rows[key] == nil else { continue }
                state.rows[key] = Row(
                    stored: stored, finishedAt: stored.state == .pending ? nil : stored.notification.receivedAt)
                state.order.append(key)
                state.byID[key.id, default: []].append(key)
            }
            for outcome in batch.outcomes {
                for key in state.byID[outcome.apnsID] ?? [] {
                    guard var row = state.rows[key] else { continue }
                    row.stored.state = outcome.state
                    if let rule = outcome.rule { row.stored.rule = rule }
                    row.finishedAt = outcome.state == .pending ? nil : outcome.at
                    state.rows[key] = row
                }
            }
            for broadcast in batch.broadcasts
            where broadcast.sequence > state.broadcasts[broadcast.channelID]?.sequence ?? .min {
                state.broadcasts[broadcast.channelID] = broadcast
            }
            for subscription in batch.subscriptions { state.subscriptions[subscription.key] = subscription }
            for key in batch.unsubscribed { state.subscriptions.removeValue(forKey: key) }
            for (key, sequence) in batch.cursors {
                guard let current = state.subscriptions[key]?.acknowledged, current < sequence else { continue }
                state.subscriptions[key]?.acknowledged = sequence
            }
            for (device, apps) in batch.budgets {
                state.budgets[device] =
                    apps.isEmpty
                    ? nil : DeviceBudgets(deviceID: device, apps: apps.sorted { $0.bundleID < $1.bundleID })
            }
        }
    }

    public func prune(finishedBefore: UnixTime, now: UnixTime) async throws -> PruneResult {
        state.withLock { state in
            let expired = Self.expire(&state, now: now, atStart: false)
            var removed = 0
            for (key, row) in state.rows {
                guard let finishedAt = row.finishedAt, finishedAt < finishedBefore else { continue }
                state.rows.removeValue(forKey: key)
                state.byID[key.id]?.removeAll { $0 == key }
                if state.byID[key.id]?.isEmpty == true { state.byID.removeValue(forKey: key.id) }
                removed += 1
            }
            if removed > 0 { state.order.removeAll { state.rows[$0] == nil } }
            state.broadcasts = state.broadcasts.filter { $0.value.deliverableUntil >= now }
            return PruneResult(removed: removed, expired: expired)
        }
    }

    public func notification(_ id: APNsID) async throws -> StoredNotification? {
        state.withLock { state in state.byID[id]?.last.flatMap { state.rows[$0]?.stored } }
    }

    public func counts() async throws -> [NotificationState: Int] {
        state.withLock { state in
            var counts: [NotificationState: Int] = [:]
            for row in state.rows.values { counts[row.stored.state, default: 0] += 1 }
            return counts
        }
    }

    public func ping() async throws {}
    public func close() async throws {}

    /// Marks pending notifications past their expiry as expired (at start, never-stored ones too).
    private static func expire(_ state: inout State, now: UnixTime, atStart: Bool) -> Int {
        var count = 0
        for (key, row) in state.rows where row.stored.state == .pending {
            guard let rule = StoreRules.expiryRule(row.stored, now: now, atStart: atStart) else { continue }
            state.rows[key]?.stored.state = .discarded
            state.rows[key]?.stored.rule = rule
            state.rows[key]?.finishedAt = now
            count += 1
        }
        return count
    }
}

/// Rules every backend applies the same way.
enum StoreRules {
    /// Why a pending notification is no longer kept at `now`, or nil when it is. At start, one with
    /// `apns-expiration: 0` had its one attempt before the restart and is not tried again.
    static func expiryRule(_ stored: StoredNotification, now: UnixTime, atStart: Bool) -> Rule? {
        guard let expiresAt = stored.expiresAt else { return atStart ? .notStoredExpirationZero : nil }
        return expiresAt < now ? .expired : nil
    }
}
