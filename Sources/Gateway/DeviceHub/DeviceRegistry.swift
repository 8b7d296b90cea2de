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
    /// A device as every node keeps it — each node keeps the whole fleet, to answer a POST for any token,
    /// so this record is kept small (docs/store.md, "Memory"): the devices sit in an array by slot, the
    /// id and the secret's hash inline, the apps in a small array of inline tokens, bundle ids and node
    /// names by number.
    struct Device {
        var id: DeviceKey
        /// The node that runs its policy (its number in `State.nodes`), when several share the database.
        var owner: UInt32?
        /// Removed devices keep their slot and id; they cannot connect again.
        var removed = false
        /// Whether `hash` is the secret's (the stored one was 32 bytes): `secretHash` without an
        /// optional's tag byte, which would round the record up by another eight.
        private var hasHash: Bool
        private var hash: SecretHash
        var apps: [AppToken] = []
        /// Live Activity tokens, by app and which one (`StoredToken.activity`).
        var activities: [ActivityKey: DeviceToken] = [:]
        /// The number of the claim that made `owner` the owner (0: registration, or as read at start).
        var claim: Int64 = 0
        /// When it last said hello (its registration, before that): pruning removes devices not seen for long.
        var lastSeen: UnixTime

        init(id: DeviceKey, secretHash: [UInt8], owner: UInt32?, lastSeen: UnixTime, removed: Bool = false) {
            self.id = id
            self.owner = owner
            self.removed = removed
            let hash = SecretHash(secretHash)
            hasHash = hash != nil
            self.hash = hash ?? SecretHash()
            self.lastSeen = lastSeen
        }

        /// SHA-256 of the secret; nil when the stored hash is not 32 bytes (it can never match).
        var secretHash: SecretHash? { hasHash ? hash : nil }

        func token(of bundle: UInt32?) -> DeviceToken? { apps.first { $0.bundle == bundle }?.token }

        mutating func setToken(_ token: DeviceToken, of bundle: UInt32) {
            if let index = apps.firstIndex(where: { $0.bundle == bundle }) {
                apps[index].token = token
            } else {
                apps.append(AppToken(token: token, bundle: bundle))
            }
        }

        mutating func removeToken(of bundle: UInt32?) -> DeviceToken? {
            guard let index = apps.firstIndex(where: { $0.bundle == bundle }) else { return nil }
            return apps.remove(at: index).token
        }
    }

    /// An installed app: its token, and its bundle id by number (`State.bundles`).
    struct AppToken {
        var token: DeviceToken
        var bundle: UInt32
    }

    /// Strings many devices share (bundle ids, node names), one copy each, numbered.
    struct Interned {
        private(set) var strings: [String] = []
        private var numbers: [String: UInt32] = [:]

        subscript(number: UInt32) -> String { strings[Int(number)] }

        func number(of string: String) -> UInt32? { numbers[string] }

        /// The string's number, given one when new.
        mutating func number(_ string: String) -> UInt32 {
            if let number = numbers[string] { return number }
            let number = UInt32(strings.count)
            strings.append(string)
            numbers[string] = number
            return number
        }
    }

    /// A SHA-256 hash held inline (an array would be a heap allocation a device), compared in constant time.
    struct SecretHash {
        private var words: (UInt64, UInt64, UInt64, UInt64)

        init?(_ bytes: [UInt8]) {
            guard bytes.count == 32 else { return nil }
            func word(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 << 8 | UInt64(bytes[at + $1]) } }
            words = (word(0), word(8), word(16), word(24))
        }

        /// Zeros: what a device without a hash keeps in its place (`Device.hasHash` false).
        fileprivate init() { words = (0, 0, 0, 0) }

        /// Every word compared, whatever differs first.
        func matches(_ other: SecretHash) -> Bool {
            ((words.0 ^ other.words.0) | (words.1 ^ other.words.1) | (words.2 ^ other.words.2)
                | (words.3 ^ other.words.3)) == 0
        }
    }

    struct ActivityKey: Hashable {
        var bundleID: String
        var activity: String
    }

    /// A token's device and status in 16 bytes (a `TokenStatus` with its bundle id would take 40): the
    /// bundle id by its number in `State.bundles`.
    struct TokenRecord {
        private var slotNumber: UInt32
        fileprivate var bundle: UInt32
        /// Milliseconds; `Int64.min` while the token is active.
        fileprivate var unregisteredAt: Int64

        fileprivate init(slot: DeviceSlot, bundle: UInt32, unregisteredAt: UnixTime?) {
            slotNumber = UInt32(slot)
            self.bundle = bundle
            self.unregisteredAt = unregisteredAt?.milliseconds ?? .min
        }

        var slot: DeviceSlot { DeviceSlot(slotNumber) }
    }

    private struct State {
        /// By slot, in registration order.
        var devices: [Device] = []
        /// Slots by device id (a slot fits in 32 bits, as in `TokenRecord`).
        var slots = CompactMap<DeviceKey, UInt32>()
        var tokens = CompactMap<DeviceToken, TokenRecord>()
        var nodes = Interned()
        var bundles = Interned()
        /// Store changes decided under the lock, in decision order, for `handOver` (docs/store.md: the
        /// order rule).
        var posted: [@Sendable (inout StoreBatch) -> Void] = []

        /// The token's record: active, or unregistered since `since`.
        mutating func setToken(_ token: DeviceToken, slot: DeviceSlot, bundle: UInt32, unregisteredAt: UnixTime?) {
            tokens[token] = TokenRecord(slot: slot, bundle: bundle, unregisteredAt: unregisteredAt)
        }

        func status(_ record: TokenRecord) -> TokenStatus {
            let bundleID = bundles[record.bundle]
            guard record.unregisteredAt != .min else { return .active(bundleID: bundleID) }
            return .unregistered(bundleID: bundleID, since: UnixTime(milliseconds: record.unregisteredAt))
        }

        func device(_ slot: DeviceSlot) -> Device? { Int(slot) < devices.count ? devices[Int(slot)] : nil }
        func device(_ id: String) -> Device? { slot(id).map { devices[Int($0)] } }
        func slot(_ id: String) -> DeviceSlot? { slots[DeviceKey(id)].map(DeviceSlot.init) }
        func owner(_ device: Device) -> String? { device.owner.map { nodes[$0] } }
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
            state.devices.reserveCapacity(state.devices.count + devices.count)
            state.slots.reserveCapacity(state.slots.count + devices.count)
            state.tokens.reserveCapacity(state.tokens.count + tokens.count)
            for stored in devices { Self.apply(stored, to: &state) }
            for stored in tokens { Self.apply(stored, to: &state) }
        }
    }

    /// A device registered on another node.
    public func apply(_ device: StoredDevice) { state.withLock { Self.apply(device, to: &$0) } }

    /// A token issued or unregistered on another node.
    public func apply(_ token: StoredToken) { state.withLock { Self.apply(token, to: &$0) } }

    private static func apply(_ stored: StoredDevice, to state: inout State) {
        let key = DeviceKey(stored.id)
        guard state.slots[key] == nil else { return }
        state.slots[key] = UInt32(state.devices.count)
        state.devices.append(
            Device(
                id: key, secretHash: stored.secretHash, owner: stored.owner.map { state.nodes.number($0) },
                lastSeen: stored.lastSeenAt ?? stored.createdAt, removed: stored.removedAt != nil))
    }

    private static func apply(_ stored: StoredToken, to state: inout State) {
        guard let slot = state.slot(stored.deviceID), let token = DeviceToken(stored.token, lengths: 2...4096)
        else { return }
        let bundle = state.bundles.number(stored.bundleID)
        let activity = stored.activity.map { ActivityKey(bundleID: state.bundles[bundle], activity: $0) }
        let index = Int(slot)
        if let since = stored.unregisteredAt {
            if let activity {
                if state.devices[index].activities[activity] == token {
                    state.devices[index].activities.removeValue(forKey: activity)
                }
            } else if state.devices[index].token(of: bundle) == token {
                _ = state.devices[index].removeToken(of: bundle)
            }
            state.setToken(token, slot: slot, bundle: bundle, unregisteredAt: since)
        } else {
            if let activity {
                state.devices[index].activities[activity] = token
            } else {
                state.devices[index].setToken(token, of: bundle)
            }
            state.setToken(token, slot: slot, bundle: bundle, unregisteredAt: nil)
        }
    }

    /// The slot of a device id.
    public func slot(ofDevice id: String) -> DeviceSlot? { state.withLock { $0.slot(id) } }

    /// The node that runs the device's policy (nil on a single node, or before any node claimed it).
    public func owner(of slot: DeviceSlot) -> String? {
        state.withLock { state in state.device(slot).flatMap { state.owner($0) } }
    }

    /// The device's owner when it became so by a claim later than `claim` (a later claim's notice
    /// heard): nil if none is known.
    func owner(of slot: DeviceSlot, claimedAfter claim: Int64) -> String? {
        state.withLock { state in
            guard let device = state.device(slot), device.claim > claim else { return nil }
            return state.owner(device)
        }
    }

    /// Records the device's new owner, unless a later claim is already known (notices of claims can
    /// arrive after this node's own later claim). Returns the owner before, when it changed.
    func setOwner(_ slot: DeviceSlot, _ node: String, claim: Int64) -> (changed: Bool, before: String?) {
        state.withLock { state in
            guard let device = state.device(slot), claim > device.claim else { return (false, nil) }
            let before = state.owner(device)
            state.devices[Int(slot)].owner = state.nodes.number(node)
            state.devices[Int(slot)].claim = claim
            return (true, before)
        }
    }

    /// The device id of a slot, for the store.
    public func deviceID(of slot: DeviceSlot) -> String? {
        state.withLock { $0.device(slot)?.id }?.id
    }

    // MARK: Provider lookups

    public func status(of token: DeviceToken) -> TokenStatus? {
        state.withLock { state in state.tokens[token].map { state.status($0) } }
    }

    /// The device (its id and slot) a token belongs to, and the token's status, for lookups.
    public func lookup(_ token: DeviceToken) -> (deviceID: String, slot: DeviceSlot, status: TokenStatus)? {
        state.withLock { state in
            guard let record = state.tokens[token], let device = state.device(record.slot) else { return nil }
            return (device.id.id, record.slot, state.status(record))
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
            let slot = DeviceSlot(state.devices.count)
            let key = DeviceKey(id)
            state.slots[key] = UInt32(slot)
            state.devices.append(
                Device(id: key, secretHash: hash, owner: nodeID.map { state.nodes.number($0) }, lastSeen: now))
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
        let presented = SecretHash(Self.hash(secret))
        return state.withLock { state in
            guard let slot = state.slot(id), let device = state.device(slot), !device.removed,
                let presented, let expected = device.secretHash, expected.matches(presented)
            else { return nil }
            return slot
        }
    }

    public func apps(of slot: DeviceSlot) -> [(bundleID: String, token: DeviceToken)] {
        state.withLock { state in
            (state.device(slot)?.apps ?? []).map { (state.bundles[$0.bundle], $0.token) }.sorted { $0.0 < $1.0 }
        }
    }

    /// Installs an app and issues its token; installing again returns the same token.
    public func install(_ bundleID: String, on slot: DeviceSlot) -> DeviceToken? {
        defer { handOver() }
        return state.withLock { state in
            guard let device = state.device(slot) else { return nil }
            if let token = device.token(of: state.bundles.number(of: bundleID)) { return token }
            return issueToken(bundleID: bundleID, activity: nil, slot: slot, state: &state)
        }
    }

    /// Issues a Live Activity token of an installed app (`activity`: which one, `ActivityTokenPurpose.key`);
    /// asking again returns the same token. Nil when the app is not installed.
    public func activityToken(_ bundleID: String, activity: String, on slot: DeviceSlot) -> DeviceToken? {
        defer { handOver() }
        return state.withLock { state in
            guard let device = state.device(slot), device.token(of: state.bundles.number(of: bundleID)) != nil else {
                return nil
            }
            if let token = device.activities[ActivityKey(bundleID: bundleID, activity: activity)] { return token }
            return issueToken(bundleID: bundleID, activity: activity, slot: slot, state: &state)
        }
    }

    /// A new token for the app — its own (`activity` nil) or one of its Live Activities' — recorded and
    /// posted to the store under the lock.
    private func issueToken(bundleID: String, activity: String?, slot: DeviceSlot, state: inout State)
        -> DeviceToken
    {
        let token = DeviceToken(Self.randomHex(bytes: 32))!
        let bundle = state.bundles.number(bundleID)
        let bundleID = state.bundles[bundle]
        if let activity {
            state.devices[Int(slot)].activities[ActivityKey(bundleID: bundleID, activity: activity)] = token
        } else {
            state.devices[Int(slot)].setToken(token, of: bundle)
        }
        state.setToken(token, slot: slot, bundle: bundle, unregisteredAt: nil)
        record(
            StoredToken(
                token: token.hex, deviceID: state.devices[Int(slot)].id.id, bundleID: bundleID, unregisteredAt: nil,
                activity: activity),
            in: &state)
        return token
    }

    /// Uninstalls an app: its token, and its Live Activity tokens, now answer 410 Unregistered with this time.
    @discardableResult
    public func uninstall(_ bundleID: String, on slot: DeviceSlot, at now: UnixTime) -> Bool {
        defer { handOver() }
        return state.withLock { state in
            guard state.device(slot) != nil,
                let token = state.devices[Int(slot)].removeToken(of: state.bundles.number(of: bundleID))
            else {
                return false
            }
            let activities = state.devices[Int(slot)].activities.filter { $0.key.bundleID == bundleID }
            for key in activities.keys { state.devices[Int(slot)].activities.removeValue(forKey: key) }
            unregister(token, of: slot, bundleID: bundleID, activity: nil, at: now, writing: true, in: &state)
            for (key, token) in activities.sorted(by: { $0.key.activity < $1.key.activity }) {
                unregister(
                    token, of: slot, bundleID: bundleID, activity: key.activity, at: now, writing: true, in: &state)
            }
            return true
        }
    }

    /// A token (the app's own, or a Live Activity's) answers 410 Unregistered from `now`; with `writing`,
    /// the change goes to the store (and the other nodes) too.
    private func unregister(
        _ token: DeviceToken, of slot: DeviceSlot, bundleID: String, activity: String?, at now: UnixTime,
        writing: Bool, in state: inout State
    ) {
        state.setToken(token, slot: slot, bundle: state.bundles.number(bundleID), unregisteredAt: now)
        guard writing else { return }
        record(
            StoredToken(
                token: token.hex, deviceID: state.devices[Int(slot)].id.id, bundleID: bundleID, unregisteredAt: now,
                activity: activity),
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
            guard let device = state.device(slot) else { return }
            state.devices[Int(slot)].lastSeen = now
            let id = device.id.id
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
            guard let slot = state.slot(id), !state.devices[Int(slot)].removed else { return nil }
            let device = state.devices[Int(slot)]
            let bundleIDs = device.apps.map { state.bundles[$0.bundle] }.sorted()
            for bundleID in bundleIDs {
                unregister(
                    device.token(of: state.bundles.number(of: bundleID))!, of: slot, bundleID: bundleID, activity: nil,
                    at: now,
                    writing: writing, in: &state)
            }
            for (key, token) in device.activities.sorted(by: {
                ($0.key.bundleID, $0.key.activity) < ($1.key.bundleID, $1.key.activity)
            }) {
                unregister(
                    token, of: slot, bundleID: key.bundleID, activity: key.activity, at: now, writing: writing,
                    in: &state)
            }
            state.devices[Int(slot)].apps = []
            state.devices[Int(slot)].activities = [:]
            state.devices[Int(slot)].removed = true
            if writing {
                post(in: &state) { [nodeID] in
                    $0.removed[id] = now
                    if nodeID != nil { $0.notices.append(.removed(deviceID: id, at: now)) }
                }
            }
            return (slot, bundleIDs)
        }
    }

    /// Devices not removed that have not said hello since `cutoff` — of those this node runs, when several
    /// share the database (another node's devices say hello there, and only there is it known).
    public func notSeen(since cutoff: UnixTime) -> [String] {
        state.withLock { state in
            state.devices.filter { device in
                !device.removed && device.lastSeen.milliseconds < cutoff.milliseconds
                    && (nodeID == nil || state.owner(device) == nodeID)
            }.map(\.id.id).sorted()
        }
    }

    /// Whether the device exists and has not been removed.
    public func isActive(_ id: String) -> Bool { state.withLock { $0.device(id).map { !$0.removed } ?? false } }

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
