import PushModel

/// A store that several gateway nodes share (PostgreSQL). Each device's policy runs on one node, its
/// owner: the node it registered on or last connected to. A push accepted by another node is stored
/// and handed to the owner over the node link once committed (or, without one, by a notice sent in the
/// same transaction); a device connecting elsewhere is claimed by that node, which loads its budgets and
/// pending notifications.
public protocol ClusterStore: StoreBackend {
    /// This node's name among the nodes sharing the database.
    var nodeID: String { get }
    /// Makes this node the owner of the devices (telling the others), in one transaction, and returns
    /// what the new owner needs of each; a device the store does not have is left out.
    func claim(deviceIDs: [String]) async throws -> [String: ClaimedDevice]
    /// Stored notifications by (apns-id, team), in the order asked (routed notices; unknown ones left out).
    func notifications(_ keys: [NotificationKey]) async throws -> [StoredNotification]
    /// Listens for the other nodes' notices until cancelled or the connection fails (then it throws);
    /// `ready` is called once notices are being received; `receive` gets them as they came, several at a time.
    func listen(ready: @Sendable () -> Void, _ receive: @Sendable ([ClusterMessage]) -> Void) async throws
    /// What a node that stopped hearing the others for a while (its listening connection lost) may have
    /// missed, rebuilt from the database as notices: the devices other nodes own, with their tokens and
    /// owners, and the notifications routed to this node that its policy has not decided yet (pending,
    /// with no rule). Each is harmless to hear twice: a known device is kept, an owner is taken only with
    /// a higher claim number, a routed push runs once.
    func missedNotices() async throws -> [ClusterNotice]
    /// Renews this node's lease (on the database's clock): the other nodes take its devices over when it
    /// goes stale. `routeAddress`: where its provider API takes routed pushes (nil: route to it through
    /// the database).
    func renewLease(routeAddress: String?) async throws
    /// Where each node with a lease takes routed pushes (the address it wrote with its lease), by node.
    func routeAddresses() async throws -> [String: String]
    /// The fleet's own secret, shared by every node through the database (made by the first that asks):
    /// the node links' tokens are made with it.
    func fleetSecret() async throws -> String
    /// Takes over the devices of nodes whose lease is older than `leaseMilliseconds` (or who hold none):
    /// this node becomes their owner, tells the others, and gets what each needs. One survivor takes each
    /// dead node's devices.
    func takeOver(leaseMilliseconds: Int64) async throws -> [TakenDevice]
    /// Notifications for this node's devices that no policy has decided (pending, no rule) and that were
    /// accepted before `cutoff`, oldest first: the sweep runs them (in normal operation there are none).
    func undecided(olderThan cutoff: UnixTime) async throws -> [NotificationKey]
    /// Stored broadcasts by channel and sequence, in the order asked (broadcast notices; unknown ones left out).
    func broadcasts(_ keys: [BroadcastKey]) async throws -> [StoredBroadcast]
}

/// A broadcast's identity: its channel and its sequence on it.
public struct BroadcastKey: Sendable, Hashable {
    public var channelID: String
    public var sequence: Int64

    public init(channelID: String, sequence: Int64) {
        self.channelID = channelID
        self.sequence = sequence
    }
}

/// A device this node took over from a node that is gone.
public struct TakenDevice: Sendable, Equatable {
    public var deviceID: String
    public var claimed: ClaimedDevice

    public init(deviceID: String, claimed: ClaimedDevice) {
        self.deviceID = deviceID
        self.claimed = claimed
    }
}

/// A notification's identity across teams: its apns-id as sent, and its team.
public struct NotificationKey: Sendable, Hashable {
    public var apnsID: String
    public var teamID: String

    public init(apnsID: String, teamID: String) {
        self.apnsID = apnsID
        self.teamID = teamID
    }
}

/// What a node taking a device over finds in the store.
public struct ClaimedDevice: Sendable, Equatable {
    /// The node that owned it before (nil: none, or this one).
    public var previousOwner: String?
    /// How many times the device has been claimed, this claim included: a node hearing of owners out of
    /// order keeps the one with the highest number.
    public var claim: Int64
    public var budgets: [AppBudget]
    /// Its pending notifications, oldest first.
    public var pending: [StoredNotification]
    /// Its channel subscriptions, with their cursors.
    public var subscriptions: [StoredSubscription]

    public init(
        previousOwner: String?, claim: Int64, budgets: [AppBudget], pending: [StoredNotification],
        subscriptions: [StoredSubscription] = []
    ) {
        self.previousOwner = previousOwner
        self.claim = claim
        self.budgets = budgets
        self.pending = pending
        self.subscriptions = subscriptions
    }
}

extension ClusterStore {
    /// One device's claim (`claim(deviceIDs:)`); throws when the store does not have it.
    public func claim(deviceID: String) async throws -> ClaimedDevice {
        guard let claimed = try await claim(deviceIDs: [deviceID])[deviceID] else {
            throw StoreError("device \(deviceID) is not in the store")
        }
        return claimed
    }
}

/// A change one node tells the others about.
public enum ClusterNotice: Sendable, Equatable {
    /// `node` now runs the policy for the device (it connected there); `claim` numbers the device's claims.
    case owner(deviceID: String, node: String, claim: Int64)
    /// A notification stored by another node for device `deviceID`, which `node` owns as far as the sender
    /// knows: `node` runs the policy for it — or, when the device has moved meanwhile (its owner died and
    /// it reconnected elsewhere), the node that owns or is claiming it now. `deviceID` is empty in notices
    /// from nodes of the version before it (and in a node's own replay of what it missed).
    case route(node: String, apnsID: String, teamID: String, deviceID: String = "")
    /// A device registered on another node (which owns it).
    case device(StoredDevice)
    /// A token issued or unregistered on another node.
    case token(StoredToken)
    /// A device removed on another node (its tokens come as `token` notices).
    case removed(deviceID: String, at: UnixTime)
    /// A broadcast channel created or deleted on another node.
    case channel(StoredChannel)
    /// A broadcast accepted (and stored) by another node: each node fans it out to the subscribers it runs.
    case broadcast(BroadcastKey)
}

/// A notice and the node it came from, as sent through PostgreSQL's NOTIFY: one line of tab-separated
/// fields (none of the values can hold a tab or a line break: ids, hex, bundle ids, node names are
/// checked), several lines to a NOTIFY (`payloads`).
public struct ClusterMessage: Sendable, Equatable {
    public var from: String
    public var notice: ClusterNotice

    public init(from: String, notice: ClusterNotice) {
        self.from = from
        self.notice = notice
    }

    static let version = "1"

    public var text: String {
        var fields = [Self.version, from]
        switch notice {
        case .owner(let device, let node, let claim): fields += ["owner", device, node, String(claim)]
        case .route(let node, let id, let team, let device): fields += ["route", node, id, team, device]
        case .device(let device):
            fields += [
                "device", device.id, Hex.encode(device.secretHash), String(device.createdAt.milliseconds),
                device.owner ?? "",
            ]
        case .token(let token):
            fields += [
                "token", token.token, token.deviceID, token.bundleID,
                token.unregisteredAt.map { String($0.milliseconds) } ?? "",
            ]
            // A Live Activity's token has a fifth field (a node of the version before skips the line, as it
            // skips any line it cannot read).
            if let activity = token.activity { fields.append(activity) }
        case .removed(let device, let at): fields += ["removed", device, String(at.milliseconds)]
        case .channel(let channel):
            fields += [
                "channel", channel.id, channel.bundleID, String(channel.storagePolicy),
                String(channel.createdAt.milliseconds), channel.deletedAt.map { String($0.milliseconds) } ?? "",
            ]
        case .broadcast(let key): fields += ["broadcast", key.channelID, String(key.sequence)]
        }
        return fields.joined(separator: "\t")
    }

    /// PostgreSQL's limit on a NOTIFY's payload is 8,000 bytes, the terminating zero included.
    public static let payloadLimit = 7_999

    /// The messages' lines packed into as few NOTIFY payloads as fit, in order: one NOTIFY for each
    /// rather than one for each notice, which every listening node's backend would read and send.
    public static func payloads(_ texts: [String], limit: Int = payloadLimit) -> [String] {
        var payloads: [String] = []
        var current = ""
        for text in texts {
            let size = text.utf8.count
            if !current.isEmpty, current.utf8.count + 1 + size > limit {
                payloads.append(current)
                current = ""
            }
            if !current.isEmpty { current.append("\n") }
            current.append(text)
        }
        if !current.isEmpty { payloads.append(current) }
        return payloads
    }

    /// The lines of one NOTIFY payload: each message, or nil for a line this version cannot read. Lines
    /// from `skipping` (a node hears its own notices too) are left out, read no further than their sender.
    /// Read as bytes (splitting a `String` by `Character` was a fifth of a node's CPU in a fleet's
    /// fan-out, every node reading every notice).
    public static func lines(of payload: String, skipping node: String? = nil)
        -> [(line: Substring, message: ClusterMessage?)]
    {
        var payload = payload
        let skipped = node.map { Array($0.utf8) }
        let read = payload.withUTF8 { bytes -> [(line: Range<Int>, message: ClusterMessage?)] in
            var lines: [(line: Range<Int>, message: ClusterMessage?)] = []
            var start = 0
            while start < bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: "\n") { end += 1 }
                defer { start = end + 1 }
                let line = UnsafeBufferPointer(rebasing: bytes[start..<end])
                if line.isEmpty { continue }
                if let skipped, Self.sender(of: line)?.elementsEqual(skipped) == true { continue }
                lines.append((start..<end, Self.read(line)))
            }
            return lines
        }
        let utf8 = payload.utf8
        func text(_ range: Range<Int>) -> Substring {
            let start = utf8.index(utf8.startIndex, offsetBy: range.lowerBound)
            return Substring(utf8[start..<utf8.index(start, offsetBy: range.count)])
        }
        return read.map { (text($0.line), $0.message) }
    }

    /// Nil for a message this version cannot read (a newer node's), which the receiver skips.
    public init?(text: String) { self.init(text: text[...]) }

    /// One line of a payload; nil as above.
    public init?(text: Substring) {
        var text = String(text)
        guard let message = text.withUTF8({ Self.read($0) }) else { return nil }
        self = message
    }

    /// A line's second field (its sender), when it has this version's first.
    private static func sender(of line: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>.SubSequence? {
        let fields = line.split(separator: UInt8(ascii: "\t"), maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count >= 2, fields[0].elementsEqual(Self.version.utf8) else { return nil }
        return fields[1]
    }

    /// One line's tab-separated fields; nil when this version cannot read it.
    private static func read(_ line: UnsafeBufferPointer<UInt8>) -> ClusterMessage? {
        var fields: [String] = []
        var start = 0
        for index in 0...line.count where index == line.count || line[index] == UInt8(ascii: "\t") {
            fields.append(String(decoding: UnsafeBufferPointer(rebasing: line[start..<index]), as: UTF8.self))
            start = index + 1
        }
        return ClusterMessage(fields: fields)
    }

    private init?(fields: [String]) {
        guard fields.count >= 3, fields[0] == Self.version else { return nil }
        from = fields[1]
        let values = Array(fields[3...])
        switch (fields[2], values.count) {
        case ("owner", 3):
            guard let claim = Int64(values[2]) else { return nil }
            notice = .owner(deviceID: values[0], node: values[1], claim: claim)
        case ("route", 3): notice = .route(node: values[0], apnsID: values[1], teamID: values[2])
        case ("route", 4):
            notice = .route(node: values[0], apnsID: values[1], teamID: values[2], deviceID: values[3])
        case ("device", 4):
            guard let hash = Hex.decode(values[1]), let created = Int64(values[2]) else { return nil }
            notice = .device(
                StoredDevice(
                    id: values[0], secretHash: hash, createdAt: UnixTime(milliseconds: created),
                    owner: values[3].isEmpty ? nil : values[3]))
        case ("token", 4), ("token", 5):
            let since = values[3].isEmpty ? nil : Int64(values[3]).map { UnixTime(milliseconds: $0) }
            guard values[3].isEmpty || since != nil else { return nil }
            notice = .token(
                StoredToken(
                    token: values[0], deviceID: values[1], bundleID: values[2], unregisteredAt: since,
                    activity: values.count == 5 ? values[4] : nil))
        case ("removed", 2):
            guard let at = Int64(values[1]) else { return nil }
            notice = .removed(deviceID: values[0], at: UnixTime(milliseconds: at))
        case ("channel", 5):
            guard let policy = Int(values[2]), let created = Int64(values[3]) else { return nil }
            let deleted = values[4].isEmpty ? nil : Int64(values[4]).map { UnixTime(milliseconds: $0) }
            guard values[4].isEmpty || deleted != nil else { return nil }
            notice = .channel(
                StoredChannel(
                    id: values[0], bundleID: values[1], storagePolicy: policy,
                    createdAt: UnixTime(milliseconds: created),
                    deletedAt: deleted))
        case ("broadcast", 2):
            guard ChannelID(values[0]) != nil, let sequence = Int64(values[1]) else { return nil }
            notice = .broadcast(BroadcastKey(channelID: values[0], sequence: sequence))
        default: return nil
        }
    }
}
