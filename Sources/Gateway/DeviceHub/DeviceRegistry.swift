import Crypto
import Foundation
import PushModel
import PushPolicy
import PushStore
import Synchronization
import WallClock

/// Who the devices are: their identities and secrets, the apps they installed and the tokens issued
/// for them. It answers the provider API's token lookups (`DeviceDirectory`) from memory; with a
/// store, every change is also written to it (the caller waits for the commit before answering the
/// device) and `restore` brings it back at start.
public final class DeviceRegistry: DeviceDirectory {
    struct Device {
        var id: String
        var slot: DeviceSlot
        var secretHash: [UInt8]
        var apps: [String: DeviceToken]
        /// Live Activity tokens, by app and which one (`StoredToken.activity`).
        var activities: [ActivityKey: DeviceToken] = [:]
        /// The node that runs its policy, when several share the database, and the number of the claim
        /// that made it the owner (0: registration, or as read at start).
        var owner: String?
        var claim: Int64 = 0
        /// When it last said hello (its registration, before that): pruning removes devices not seen for long.
        var lastSeen: UnixTime
        /// Removed devices keep their slot and id; they cannot connect again.
        var removed = false
    }

    struct ActivityKey: Hashable {
        var bundleID: String
        var activity: String
    }

    struct TokenRecord {
        var slot: DeviceSlot
        var status: TokenStatus
    }

    private struct State {
        var devices: [String: Device] = [:]
        var bySlot: [String] = []
        var tokens: [DeviceToken: TokenRecord] = [:]
        /// Store changes decided under the lock, in decision order, for `handOver` (docs/store.md: the
        /// order rule).
        var posted: [@Sendable (inout StoreBatch) -> Void] = []
    }

    private let state = Mutex(State())
    /// Held while posted changes are handed to the writer: one thread at a time, so none overtakes another.
    private let handingOver = Mutex(())
    let writer: StoreWriter?
    let clock: @Sendable () -> UnixTime
    /// This node's name when several share the database: new devices are owned by it, and every change
    /// is told to the other nodes in its commit.
    public let nodeID: String?

    public init(
        writer: StoreWriter? = nil, nodeID: String? = nil, clock: @escaping @Sendable () -> UnixTime = UnixTime.now
    ) {
        self.writer = writer
        self.nodeID = nodeID
        self.clock = clock
    }

    /// Brings back the devices (slots in registration order) and their tokens from the store.
    public func restore(devices: [StoredDevice], tokens: [StoredToken]) {
        state.withLock { state in
            for stored in devices { Self.apply(stored, to: &state) }
            for stored in tokens { Self.apply(stored, to: &state) }
        }
    }

    /// A device registered on another node.
    public func apply(_ device: StoredDevice) { state.withLock { Self.apply(device, to: &$0) } }

    /// A token issued or unregistered on another node.
    public func apply(_ token: StoredToken) { state.withLock { Self.apply(token, to: &$0) } }

    private static func apply(_ stored: StoredDevice, to state: inout State) {
        guard state.devices[stored.id] == nil else { return }
        let slot = DeviceSlot(state.bySlot.count)
        state.bySlot.append(stored.id)
        state.devices[stored.id] = Device(
            id: stored.id, slot: slot, secretHash: stored.secretHash, apps: [:], owner: stored.owner,
            lastSeen: stored.lastSeenAt ?? stored.createdAt, removed: stored.removedAt != nil)
    }

    private static func apply(_ stored: StoredToken, to state: inout State) {
        guard var device = state.devices[stored.deviceID], let token = DeviceToken(stored.token, lengths: 2...4096)
        else { return }
        let activity = stored.activity.map { ActivityKey(bundleID: stored.bundleID, activity: $0) }
        if let since = stored.unregisteredAt {
            if let activity {
                if device.activities[activity] == token { device.activities.removeValue(forKey: activity) }
            } else if device.apps[stored.bundleID] == token {
                device.apps.removeValue(forKey: stored.bundleID)
            }
            state.tokens[token] = TokenRecord(
                slot: device.slot, status: .unregistered(bundleID: stored.bundleID, since: since))
        } else {
            if let activity {
                device.activities[activity] = token
            } else {
                device.apps[stored.bundleID] = token
            }
            state.tokens[token] = TokenRecord(slot: device.slot, status: .active(bundleID: stored.bundleID))
        }
        state.devices[device.id] = device
    }

    /// The slot of a device id.
    public func slot(ofDevice id: String) -> DeviceSlot? { state.withLock { $0.devices[id]?.slot } }

    /// The node that runs the device's policy (nil on a single node, or before any node claimed it).
    public func owner(of slot: DeviceSlot) -> String? {
        state.withLock { Int(slot) < $0.bySlot.count ? $0.devices[$0.bySlot[Int(slot)]]?.owner : nil }
    }

    /// Records the device's new owner, unless a later claim is already known (notices of claims can
    /// arrive after this node's own later claim). Returns the owner before, when it changed.
    func setOwner(_ slot: DeviceSlot, _ node: String, claim: Int64) -> (changed: Bool, before: String?) {
        state.withLock { state in
            guard Int(slot) < state.bySlot.count, var device = state.devices[state.bySlot[Int(slot)]],
                claim > device.claim
            else { return (false, nil) }
            let before = device.owner
            device.owner = node
            device.claim = claim
            state.devices[device.id] = device
            return (true, before)
        }
    }

    /// The device id of a slot, for the store.
    public func deviceID(of slot: DeviceSlot) -> String? {
        state.withLock { Int(slot) < $0.bySlot.count ? $0.bySlot[Int(slot)] : nil }
    }

    // MARK: Provider lookups

    public func status(of token: DeviceToken) -> TokenStatus? {
        state.withLock { $0.tokens[token]?.status }
    }

    /// The device (its id and slot) a token belongs to, and the token's status, for lookups.
    public func lookup(_ token: DeviceToken) -> (deviceID: String, slot: DeviceSlot, status: TokenStatus)? {
        state.withLock { state in
            guard let record = state.tokens[token], Int(record.slot) < state.bySlot.count else { return nil }
            return (state.bySlot[Int(record.slot)], record.slot, record.status)
        }
    }

    /// The device a token belongs to, for delivery.
    public func slot(of token: DeviceToken) -> DeviceSlot? {
        state.withLock { $0.tokens[token]?.slot }
    }

    // MARK: Devices

    /// A new device: its id, its secret (shown once), and its slot.
    public func register() -> (id: String, secret: String, slot: DeviceSlot) {
        let id = UUID().uuidString.lowercased()
        let secret = Self.randomHex(bytes: 32)
        let hash = Self.hash(secret)
        let now = clock()
        let stored = StoredDevice(id: id, secretHash: hash, createdAt: now, owner: nodeID)
        let slot = state.withLock { state -> DeviceSlot in
            let slot = DeviceSlot(state.bySlot.count)
            state.bySlot.append(id)
            state.devices[id] = Device(id: id, slot: slot, secretHash: hash, apps: [:], owner: nodeID, lastSeen: now)
            post(in: &state) { [nodeID] in
                $0.devices.append(stored)
                if nodeID != nil { $0.notices.append(.device(stored)) }
            }
            return slot
        }
        handOver()
        return (id, secret, slot)
    }

    /// The device's slot when the secret is right; nil otherwise (no hint which part was wrong).
    public func authenticate(id: String, secret: String) -> DeviceSlot? {
        let presented = Self.hash(secret)
        return state.withLock { state in
            guard let device = state.devices[id], !device.removed,
                ConstantTime.equal(presented, device.secretHash)
            else { return nil }
            return device.slot
        }
    }

    public func apps(of slot: DeviceSlot) -> [(bundleID: String, token: DeviceToken)] {
        state.withLock { state in
            guard Int(slot) < state.bySlot.count, let device = state.devices[state.bySlot[Int(slot)]] else { return [] }
            return device.apps.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 }
        }
    }

    /// Installs an app and issues its token; installing again returns the same token.
    public func install(_ bundleID: String, on slot: DeviceSlot) -> DeviceToken? {
        defer { handOver() }
        return state.withLock { state in
            guard Int(slot) < state.bySlot.count, var device = state.devices[state.bySlot[Int(slot)]] else {
                return nil
            }
            if let token = device.apps[bundleID] { return token }
            return issueToken(bundleID: bundleID, activity: nil, device: &device, state: &state)
        }
    }

    /// Issues a Live Activity token of an installed app (`activity`: which one, `ActivityTokenPurpose.key`);
    /// asking again returns the same token. Nil when the app is not installed.
    public func activityToken(_ bundleID: String, activity: String, on slot: DeviceSlot) -> DeviceToken? {
        defer { handOver() }
        return state.withLock { state in
            guard Int(slot) < state.bySlot.count, var device = state.devices[state.bySlot[Int(slot)]],
                device.apps[bundleID] != nil
            else { return nil }
            if let token = device.activities[ActivityKey(bundleID: bundleID, activity: activity)] { return token }
            return issueToken(bundleID: bundleID, activity: activity, device: &device, state: &state)
        }
    }

    /// A new token for the app — its own (`activity` nil) or one of its Live Activities' — recorded and
    /// posted to the store under the lock.
    private func issueToken(bundleID: String, activity: String?, device: inout Device, state: inout State)
        -> DeviceToken
    {
        let token = DeviceToken(Self.randomHex(bytes: 32))!
        if let activity {
            device.activities[ActivityKey(bundleID: bundleID, activity: activity)] = token
        } else {
            device.apps[bundleID] = token
        }
        state.devices[device.id] = device
        state.tokens[token] = TokenRecord(slot: device.slot, status: .active(bundleID: bundleID))
        record(
            StoredToken(
                token: token.hex, deviceID: device.id, bundleID: bundleID, unregisteredAt: nil, activity: activity),
            in: &state)
        return token
    }

    /// Uninstalls an app: its token, and its Live Activity tokens, now answer 410 Unregistered with this time.
    @discardableResult
    public func uninstall(_ bundleID: String, on slot: DeviceSlot, at now: UnixTime) -> Bool {
        defer { handOver() }
        return state.withLock { state in
            guard Int(slot) < state.bySlot.count, var device = state.devices[state.bySlot[Int(slot)]],
                let token = device.apps.removeValue(forKey: bundleID)
            else { return false }
            let activities = device.activities.filter { $0.key.bundleID == bundleID }
            for key in activities.keys { device.activities.removeValue(forKey: key) }
            state.devices[device.id] = device
            unregister(token, of: device, bundleID: bundleID, activity: nil, at: now, writing: true, in: &state)
            for (key, token) in activities.sorted(by: { $0.key.activity < $1.key.activity }) {
                unregister(
                    token, of: device, bundleID: bundleID, activity: key.activity, at: now, writing: true, in: &state)
            }
            return true
        }
    }

    /// A token (the app's own, or a Live Activity's) answers 410 Unregistered from `now`; with `writing`,
    /// the change goes to the store (and the other nodes) too.
    private func unregister(
        _ token: DeviceToken, of device: Device, bundleID: String, activity: String?, at now: UnixTime,
        writing: Bool, in state: inout State
    ) {
        state.tokens[token] = TokenRecord(slot: device.slot, status: .unregistered(bundleID: bundleID, since: now))
        guard writing else { return }
        record(
            StoredToken(
                token: token.hex, deviceID: device.id, bundleID: bundleID, unregisteredAt: now, activity: activity),
            in: &state)
    }

    /// Posts a token's change (and tells the other nodes), under the lock, so the store sees a token's
    /// changes in the order they happened.
    private func record(_ token: StoredToken, in state: inout State) {
        post(in: &state) { [nodeID] in
            $0.tokens.append(token)
            if nodeID != nil { $0.notices.append(.token(token)) }
        }
    }

    /// Posts a store change, under the lock that decided it (nothing without a store).
    private func post(in state: inout State, _ apply: @escaping @Sendable (inout StoreBatch) -> Void) {
        guard writer != nil else { return }
        state.posted.append(apply)
    }

    /// Hands what was posted to the store's writer in the order it was decided, after the lock is
    /// released: one thread at a time takes everything posted so far (docs/store.md: the order rule).
    private func handOver() {
        guard let writer else { return }
        handingOver.withLock { _ in
            let posted = state.withLock { state in
                defer { state.posted.removeAll(keepingCapacity: true) }
                return state.posted
            }
            for apply in posted { writer.enqueue(apply) }
        }
    }

    public var deviceCount: Int { state.withLock { $0.devices.count } }

    // MARK: Last seen, removal

    /// The device said hello now: pruning counts from here (written to the store, not waited for).
    func seen(_ slot: DeviceSlot, at now: UnixTime) {
        state.withLock { state in
            guard Int(slot) < state.bySlot.count, var device = state.devices[state.bySlot[Int(slot)]] else {
                return
            }
            device.lastSeen = now
            state.devices[device.id] = device
            let id = device.id
            post(in: &state) { $0.seen[id] = now }
        }
        handOver()
    }

    /// Removes a device: it cannot connect again and each of its tokens answers 410 Unregistered from
    /// `now`. Returns its slot and the apps it had, or nil when no such device is known (or it is gone).
    public func remove(_ id: String, at now: UnixTime) -> (slot: DeviceSlot, bundleIDs: [String])? {
        markRemoved(id, at: now, writing: true)
    }

    /// Another node removed the device (and wrote it): here only memory changes. Returns its slot and
    /// the apps it had, as `remove` does.
    func removedElsewhere(_ id: String, at now: UnixTime) -> (slot: DeviceSlot, bundleIDs: [String])? {
        markRemoved(id, at: now, writing: false)
    }

    /// Its tokens unregistered from `now`, its apps gone, the device marked removed; with `writing`, each
    /// change also goes to the store (and the other nodes), under the lock so they stay in order.
    private func markRemoved(_ id: String, at now: UnixTime, writing: Bool) -> (slot: DeviceSlot, bundleIDs: [String])?
    {
        defer { handOver() }
        return state.withLock { state in
            guard var device = state.devices[id], !device.removed else { return nil }
            let bundleIDs = device.apps.keys.sorted()
            for bundleID in bundleIDs {
                unregister(
                    device.apps[bundleID]!, of: device, bundleID: bundleID, activity: nil, at: now, writing: writing,
                    in: &state)
            }
            for (key, token) in device.activities.sorted(by: {
                ($0.key.bundleID, $0.key.activity) < ($1.key.bundleID, $1.key.activity)
            }) {
                unregister(
                    token, of: device, bundleID: key.bundleID, activity: key.activity, at: now, writing: writing,
                    in: &state)
            }
            device.apps = [:]
            device.activities = [:]
            device.removed = true
            state.devices[id] = device
            if writing {
                post(in: &state) { [nodeID] in
                    $0.removed[id] = now
                    if nodeID != nil { $0.notices.append(.removed(deviceID: id, at: now)) }
                }
            }
            return (device.slot, bundleIDs)
        }
    }

    /// Devices not removed that have not said hello since `cutoff` — of those this node runs, when several
    /// share the database (another node's devices say hello there, and only there is it known).
    public func notSeen(since cutoff: UnixTime) -> [String] {
        state.withLock { state in
            state.devices.values.filter { device in
                !device.removed && device.lastSeen.milliseconds < cutoff.milliseconds
                    && (nodeID == nil || device.owner == nodeID)
            }.map(\.id).sorted()
        }
    }

    /// Whether the device exists and has not been removed.
    public func isActive(_ id: String) -> Bool { state.withLock { $0.devices[id].map { !$0.removed } ?? false } }

    static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return Hex.encode((0..<bytes).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    static func hash(_ secret: String) -> [UInt8] { Array(SHA256.hash(data: Data(secret.utf8))) }
}

/// Looks tokens up in several directories, first answer wins: devices' own tokens, then scripted ones.
public struct CombinedDirectory: DeviceDirectory {
    let directories: [any DeviceDirectory]

    public init(_ directories: [any DeviceDirectory]) { self.directories = directories }

    public func status(of token: DeviceToken) -> TokenStatus? {
        for directory in directories {
            if let status = directory.status(of: token) { return status }
        }
        return nil
    }
}
