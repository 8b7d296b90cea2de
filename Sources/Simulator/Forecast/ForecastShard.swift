import DeviceRuntime
import GatewayCore
import PushModel
import PushPolicy

/// A shard of a forecast's fleet on one virtual clock: the devices' `SimulatedIPhone`s, the gateway's
/// `ThrottleEngine` for them, their keep-alives, their transfers as computed end times, and the content's
/// publications announced with each app's pushes. Every event comes off one `EventQueue` in (time,
/// sequence) order. Devices do not affect each other, so a fleet splits into shards that run on any
/// number of threads and add up to the same figures.
///
/// What the real run has that this does not: the network's and the event loops' delays between a
/// decision and its delivery, acknowledgement or completion (here they happen in the same millisecond),
/// and the announcements' spread over the seconds their POSTs take.
final class ForecastShard {
    let scenario: ForecastScenario
    /// The fleet-wide index of this shard's device 0.
    let firstDevice: Int
    let publishTimes: [Int64]
    /// Whether any device is traced (asked for every action: a Bool, not a look into the set).
    let tracing: Bool
    let end: Int64

    var iphones: [SimulatedIPhone] = []
    var kindOf: [UInt8] = []
    var keepAlives: [KeepAliveSchedule] = []
    /// The time of each device's standing deadline entry (Int64.max: none).
    var deadlineAt: [Int64] = []
    /// The time of each device's standing keep-alive entry (Int64.max: none: it holds nothing).
    var keepAliveAt: [Int64] = []
    /// The gateway's decisions, as the hub makes them: the policy, each device's delivery queue, who is
    /// connected. A delivery it lets through is acknowledged at once.
    var core: HubCore
    /// Per kind, each app's name in the policy (by slot): interned once, not hashed per call.
    var policyApps: [[PolicyApp]] = []
    var queue = EventQueue()
    var policyTimerAt = Int64.max
    /// Each device's running transfers (a handful at most: scanned, not hashed).
    var transfers: [[Running]] = []
    /// Per kind: the apps, their item sizes and strategies.
    let apps: [[(bundleID: String, behaviour: AppBehaviour, announce: AppProfile.Announcement)]]
    /// Per kind, by app slot: how its backend updates its Live Activities.
    let live: [[LiveActivities]]
    /// The broadcast channels, one per app and activity that follows one (`LiveActivities.channels`),
    /// each with its subscribers in this shard in the order they subscribed; and per kind, the channel
    /// of each of its apps' channel activities.
    var channels: [Channel] = []
    var channelIndex: [ChannelID: Int] = [:]
    var kindChannels: [[(slot: Int, channel: Int)]] = []
    var broadcastCounter: UInt64 = 0

    struct Channel {
        var id: ChannelID
        var bundleID: String
        var activity: Int
        var subscribers: [DeviceSlot] = []
    }
    /// Live Activity updates of the current version, per kind by app slot (nil: the app has no activity
    /// updated by token).
    var liveTemplates: [[PushNotification?]] = []
    var now: Int64
    var pushCounter: UInt64 = 0
    /// Live Activity updates sent and neither delivered nor discarded yet: a discard of one is an update
    /// lost.
    var liveUpdatesInFlight = Set<APNsID>()
    /// Announcement pushes of the current version, per kind by app slot (parsed once per app, copied
    /// per device).
    var templates: [[[PushNotification]]] = []
    var templatesVersion = 0
    var runtimeBuffers = BufferPool<RuntimeAction>()
    var policyBuffers = BufferPool<PolicyAction>()
    var writeBuffers = BufferPool<CoreWrite>()

    /// Folds each open as it comes (the publications are known in advance).
    var ledger: FreshnessLedger
    var ledgerIndex: [Int] = []
    var costs: [KindCosts]
    var events = 0
    var trace: [TraceLine] = []
    /// Per hour of the run: pushes sent and background wakes (the cost over the day).
    var hourlyPushes: [Int]
    var hourlyWakes: [Int]

    /// An app's Live Activities as its backend updates them: `channels` follow a broadcast channel each
    /// (activities `0..<channels`), the rest get an update pushed to their token at `priority`.
    struct LiveActivities {
        var count: Int
        var channels: Int
        var priority: Int
        var frequent: Bool

        init(_ app: AppProfile) {
            count = app.live_activities
            channels = app.channels
            priority = app.live_activity_priority
            frequent = app.frequent_pushes
        }
    }

    /// The update token of one activity of an app on a device, as the device's registry issues it (the
    /// policy budgets per token within the device's app): an update is addressed to it, and the device
    /// knows by it which of its activities the update is for. (Each device's tokens are its own; the
    /// forecast routes by device, so the same placeholder serves every device.)
    static let activityTokens: [DeviceToken] = (0..<AppProfile.maximumLiveActivities).map {
        let hex = String($0 + 1, radix: 16)
        return DeviceToken(String(repeating: "0", count: 64 - hex.count) + hex)!
    }

    struct Running {
        var request: TransferRequest
        var from: Int64
        var size: Int64
        var startedAt: Int64
        var endsAt: Int64
        /// Its request's latency (`LinkModel.latency`).
        var latency: Int64
    }

    /// What one kind of iPhone cost, besides the freshness ledger's figures.
    struct KindCosts: Sendable {
        var pushesSent = 0
        var silentSent = 0
        var alertsSent = 0
        /// Policy decisions by rule (`Rule.allCases` order), and deadline misses.
        var rules = [Int](repeating: 0, count: Rule.allCases.count)
        var deadlineMisses = 0
        var awakeMilliseconds: Int64 = 0
        /// Live Activity updates pushed to activities' tokens (part of `pushesSent`), those the gateway
        /// let go without delivering (replaced while held over budget, expired), and broadcast writes
        /// (one per subscriber of a channel per version).
        var liveActivityUpdatesSent = 0
        var liveActivityUpdatesDropped = 0
        var broadcastWrites = 0
        /// Widget and control pushes sent (part of `pushesSent`), and delivered, by surface.
        var reloadPushesSent = [0, 0]
        var reloadPushesDelivered = [0, 0]

        mutating func add(_ other: KindCosts) {
            for index in reloadPushesSent.indices {
                reloadPushesSent[index] += other.reloadPushesSent[index]
                reloadPushesDelivered[index] += other.reloadPushesDelivered[index]
            }
            liveActivityUpdatesSent += other.liveActivityUpdatesSent
            liveActivityUpdatesDropped += other.liveActivityUpdatesDropped
            broadcastWrites += other.broadcastWrites
            pushesSent += other.pushesSent
            silentSent += other.silentSent
            alertsSent += other.alertsSent
            for index in rules.indices { rules[index] += other.rules[index] }
            deadlineMisses += other.deadlineMisses
            awakeMilliseconds += other.awakeMilliseconds
        }
    }

    struct TraceLine: Sendable {
        var time: Int64
        var device: Int
        var order: Int
        var line: ForecastTraceLine
    }

    /// Devices `range` (fleet-wide indexes) of the scenario's fleet.
    init(scenario: ForecastScenario, range: Range<Int>) {
        self.scenario = scenario
        firstDevice = range.lowerBound
        end = scenario.end.milliseconds
        tracing = !scenario.traced.isEmpty
        publishTimes = scenario.publications.times(from: scenario.start, until: scenario.end)
        ledger = scenario.ledger()
        now = scenario.start.milliseconds
        // The shard's own copies of the bundle ids: every push and every policy call retains one, and a
        // string shared with the shards on other threads makes each of those a contended atomic.
        apps = scenario.kinds.map { kind in
            kind.profile.apps.map {
                (
                    bundleID: String(decoding: Array($0.bundle_id.utf8), as: UTF8.self), behaviour: $0.behaviour,
                    announce: $0.announce
                )
            }
        }
        live = scenario.kinds.map { kind in kind.profile.apps.map(LiveActivities.init) }
        var byApp: [String: Int] = [:]
        var channels: [Channel] = []
        for (kind, kindApps) in apps.enumerated() {
            var mine: [(slot: Int, channel: Int)] = []
            for (slot, app) in kindApps.enumerated() {
                for activity in 0..<live[kind][slot].channels {
                    let key = "\(app.bundleID)#\(activity)"
                    if byApp[key] == nil {
                        byApp[key] = channels.count
                        channels.append(
                            Channel(id: Self.channelID(channels.count), bundleID: app.bundleID, activity: activity))
                    }
                    mine.append((slot, byApp[key]!))
                }
            }
            kindChannels.append(mine)
        }
        self.channels = channels
        for (index, channel) in channels.enumerated() { channelIndex[channel.id] = index }
        var engine = ThrottleEngine(settings: scenario.policy, decisionLogCapacity: 0)
        policyApps = apps.map { kind in kind.map { engine.app($0.bundleID) } }
        core = HubCore(policy: engine, deliveries: DeliveryQueues(window: 1, limit: Int.max))
        costs = Array(repeating: KindCosts(), count: scenario.kinds.count)
        hourlyPushes = Array(repeating: 0, count: max(1, Int(scenario.hours.rounded(.up))))
        hourlyWakes = hourlyPushes
        for kind in scenario.kinds { ledgerIndex.append(ledger.profileIndex(kind.name)) }

        let start = scenario.start
        var index = 0
        iphones.reserveCapacity(range.count)
        for (kindIndex, kind) in scenario.kinds.enumerated() {
            let kindApps = apps[kindIndex].map { (bundleID: $0.bundleID, behaviour: $0.behaviour) }
            let ios = kind.profile.iosProfile
            for _ in 0..<kind.devices {
                defer { index += 1 }
                guard range.contains(index) else { continue }
                let seed = scenario.seed &+ UInt64(index)
                var iphone = SimulatedIPhone(
                    profile: ios, apps: kindApps, users: kind.profile.users, seed: seed, now: start)
                if let until = scenario.usersUntil { iphone.usersUntil = until.milliseconds }
                iphones.append(iphone)
                kindOf.append(UInt8(kindIndex))
                keepAlives.append(
                    KeepAliveSchedule(
                        connectedAt: UnixTime(milliseconds: connectionTime(index)),
                        intervalSeconds: scenario.keepAliveSeconds, jitter: scenario.keepAliveJitter, seed: seed))
            }
        }
        deadlineAt = Array(repeating: .max, count: iphones.count)
        transfers = Array(repeating: [], count: iphones.count)
        keepAliveAt = Array(repeating: .max, count: iphones.count)
        for (index, at) in publishTimes.enumerated() {
            queue.schedule(at: at, .publish, target: 0, argument: Int32(index))
        }
    }

    var deviceCount: Int { iphones.count }

    /// When fleet-wide device `index` first connects: the start, or its replayed instant.
    func connectionTime(_ index: Int) -> Int64 {
        let start = scenario.start.milliseconds
        guard let times = scenario.connectedAt, times.indices.contains(index) else { return start }
        return max(start, times[index])
    }

    /// Runs to the scenario's end; `progress` hears the virtual time now and then.
    func run(progress: (Int64) -> Void = { _ in }) {
        // Every device connects at the start, or when the replayed run's did (its users' events wait
        // for it, as the real shell's timer does).
        for device in iphones.indices {
            let at = connectionTime(firstDevice + device)
            if at <= now { connect(device) } else { queue.schedule(at: at, .connect, target: UInt32(device)) }
        }
        var sinceProgress = 0
        while let entry = queue.pop() {
            guard entry.time < end else { break }
            now = entry.time
            events += 1
            sinceProgress += 1
            if sinceProgress == 65_536 {
                sinceProgress = 0
                progress(now)
            }
            let device = Int(entry.target)
            switch entry.kind {
            case .deadline:
                // The device's one standing entry (moved in place when its deadline moved).
                deadlineAt[device] = .max
                var link = ShardLink(shard: self, device: device)
                var actions = runtimeBuffers.take()
                iphones[device].advance(to: UnixTime(milliseconds: now), link: &link, into: &actions)
                after(device, actions)
                runtimeBuffers.give(&actions)
            case .keepAlive:
                guard keepAliveAt[device] == entry.time else { continue }
                keepAliveAt[device] = .max
                keepAlives[device].advance()
                if isTraced(device) { record(device, "keep_alive") }
                var actions = policyBuffers.take()
                core.policy.keepAlive(device: DeviceSlot(device), now: UnixTime(milliseconds: now), into: &actions)
                apply(actions)
                policyBuffers.give(&actions)
                armKeepAlive(device)
            case .transferEnd:
                transferEnded(device, id: Int(entry.argument), at: entry.time)
            case .publish:
                publish(Int(entry.argument))
            case .connect:
                connect(device)
            case .announce:
                announce(Int(entry.argument), to: device)
            case .policyTimer:
                guard policyTimerAt == entry.time else { continue }
                policyTimerAt = .max
                var actions = policyBuffers.take()
                core.policy.advance(to: UnixTime(milliseconds: now), into: &actions)
                apply(actions)
                policyBuffers.give(&actions)
                armPolicyTimer()
            }
        }
        now = end
        for device in iphones.indices {
            iphones[device].finish(at: UnixTime(milliseconds: end))
            costs[Int(kindOf[device])].awakeMilliseconds += iphones[device].awakeMilliseconds
        }
        progress(end)
    }

    /// The device connects: the gateway delivers what it stored (nothing: a forecast's publications
    /// come after its devices connect), and its runtime starts.
    func connect(_ device: Int) {
        var writes = writeBuffers.take()
        let actions = core.connected(DeviceSlot(device), now: UnixTime(milliseconds: now), writes: &writes)
        deliver(writes)
        writeBuffers.give(&writes)
        apply(actions)
        // Its activities on channels subscribe (given the channel's newest message if it has one).
        var caughtUp = writeBuffers.take()
        for (_, channel) in kindChannels[Int(kindOf[device])] {
            guard
                core.subscribe(
                    DeviceSlot(device), to: channels[channel].id, bundleID: channels[channel].bundleID,
                    storage: .mostRecentMessageStored, now: UnixTime(milliseconds: now), writes: &caughtUp) != nil
            else { continue }
            channels[channel].subscribers.append(DeviceSlot(device))
        }
        deliver(caughtUp)
        writeBuffers.give(&caughtUp)
        // Apps with frequent Live Activity updates say so on every connection.
        for (slot, app) in live[Int(kindOf[device])].enumerated() where app.frequent {
            core.policy.frequentPushesChanged(
                device: DeviceSlot(device), bundleID: apps[Int(kindOf[device])][slot].bundleID, enabled: true,
                now: UnixTime(milliseconds: now))
        }
        var link = ShardLink(shard: self, device: device)
        var started = runtimeBuffers.take()
        iphones[device].start(at: UnixTime(milliseconds: now), link: &link, into: &started)
        after(device, started)
        runtimeBuffers.give(&started)
    }
}
