import DeviceRuntime
import GatewayCore
import PushModel
import PushPolicy

/// A slice of a forecast's fleet on one virtual clock: the devices' `SimulatedIPhone`s, the gateway's
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
    private let publishTimes: [Int64]
    /// Whether any device is traced (asked for every action: a Bool, not a look into the set).
    private let tracing: Bool
    private let end: Int64

    private var iphones: [SimulatedIPhone] = []
    private var kindOf: [UInt8] = []
    private var keepAlives: [KeepAliveSchedule] = []
    /// The time of each device's standing deadline entry (Int64.max: none).
    private var deadlineAt: [Int64] = []
    /// The time of each device's standing keep-alive entry (Int64.max: none: it holds nothing).
    private var keepAliveAt: [Int64] = []
    /// The gateway's decisions, as the hub makes them: the policy, each device's delivery queue, who is
    /// connected. A delivery it lets through is acknowledged at once.
    private var core: HubCore
    /// Per kind, each app's name in the policy (by slot): interned once, not hashed per call.
    private var policyApps: [[PolicyApp]] = []
    private var queue = EventQueue()
    private var policyTimerAt = Int64.max
    /// Each device's running transfers (a handful at most: scanned, not hashed).
    private var transfers: [[Running]] = []
    /// Per kind: the apps, their item sizes and strategies.
    private let apps: [[(bundleID: String, behaviour: AppBehaviour, announce: AppProfile.Announcement)]]
    /// Per kind, by app slot: how its backend updates its Live Activities.
    private let live: [[LiveActivities]]
    /// The broadcast channels, one per app and activity that follows one (`LiveActivities.channels`),
    /// each with its subscribers in this shard in the order they subscribed; and per kind, the channel
    /// of each of its apps' channel activities.
    private var channels: [Channel] = []
    private var channelIndex: [ChannelID: Int] = [:]
    private var kindChannels: [[(slot: Int, channel: Int)]] = []
    private var broadcastCounter: UInt64 = 0

    struct Channel {
        var id: ChannelID
        var bundleID: String
        var activity: Int
        var subscribers: [DeviceSlot] = []
    }
    /// Live Activity updates of the current version, per kind by app slot (nil: the app has no activity
    /// updated by token).
    private var liveTemplates: [[PushNotification?]] = []
    private var now: Int64
    private var pushCounter: UInt64 = 0
    /// Announcement pushes of the current version, per kind by app slot (parsed once per app, copied
    /// per device).
    private var templates: [[[PushNotification]]] = []
    private var templatesVersion = 0
    private var runtimeBuffers = BufferPool<RuntimeAction>()
    private var policyBuffers = BufferPool<PolicyAction>()
    private var writeBuffers = BufferPool<CoreWrite>()

    /// Folds each open as it comes (the publications are known in advance).
    private(set) var ledger: FreshnessLedger
    private var ledgerIndex: [Int] = []
    private(set) var costs: [KindCosts]
    private(set) var events = 0
    private(set) var trace: [TraceLine] = []
    /// Per hour of the run: pushes sent and background wakes (the cost over the day).
    private(set) var hourlyPushes: [Int]
    private(set) var hourlyWakes: [Int]

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

    /// A Live Activity update's push id: the device in the high half (as every push's), and in the low
    /// half a mark, the version, the app and the activity — so a delivery says what it updates, and a
    /// discard that an update was lost.
    static func liveActivityID(device: Int, version: Int, app: Int, activity: Int) -> APNsID {
        APNsID(
            high: UInt64(device),
            low: liveActivityMark | UInt64(version) << 16 | UInt64(app) << 8 | UInt64(activity))
    }
    static let liveActivityMark: UInt64 = 1 << 63

    /// The placeholder token of one activity of an app on a device (the policy budgets per token within
    /// the device's app).
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
    private func connectionTime(_ index: Int) -> Int64 {
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
    private func connect(_ device: Int) {
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

    // MARK: Publications

    /// Version `index + 1` is out: every device's announcing apps get their backend's pushes, at once or
    /// spread over `announcementSeconds` (device by device, fleet order). The first too: a real run
    /// publishes and announces it once every device has its tokens (`pushgate simulate`, the demo), and a
    /// forecast's devices have theirs from the start.
    private func publish(_ index: Int) {
        broadcast(version: index + 1)
        let each = scenario.announcementSecondsEach
        let spread = Int64((index < each.count ? each[index] : scenario.announcementSeconds) * 1000)
        guard spread > 0 else {
            for device in iphones.indices { announce(index, to: device) }
            return
        }
        let devices = Int64(max(1, scenario.devices))
        for device in iphones.indices {
            let at = now + spread * Int64(firstDevice + device + 1) / devices
            queue.schedule(at: at, .announce, target: UInt32(device), argument: Int32(index))
        }
    }

    /// Version `version` is broadcast on every channel: one POST each, fanned out by the gateway's core to
    /// every subscriber connected (a forecast's devices always are), outside the update budget.
    private func broadcast(version: Int) {
        guard !channels.isEmpty else { return }
        let time = UnixTime(milliseconds: now)
        let timestamp = publishTimes[version - 1] / 1000
        for channel in channels.indices where !channels[channel].subscribers.isEmpty {
            let request = AnnouncementRequest.liveActivityUpdate(
                topic: channels[channel].bundleID, version: version, priority: 10, timestamp: timestamp)
            guard let template = Self.notification(request, bundleID: channels[channel].bundleID, at: now) else {
                continue
            }
            broadcastCounter += 1
            let push = PushNotification(
                id: APNsID(high: Self.broadcastMark, low: broadcastCounter), deviceToken: BroadcastMessage.noDevice,
                topic: template.topic, bundleID: template.bundleID, pushType: template.pushType,
                priority: template.priority, expiration: template.expiration, collapseID: nil,
                notificationClass: template.notificationClass, mismatch: template.mismatch, payload: template.payload,
                teamID: nil, receivedAt: time,
                broadcast: BroadcastStamp(channel: channels[channel].id, sequence: Int64(broadcastCounter)))
            let message = BroadcastMessage(
                push: push,
                deliverableUntil: BroadcastMessage.deliverableUntil(
                    policy: .mostRecentMessageStored, expiration: push.expiration, acceptedAt: time,
                    graceMilliseconds: 0))
            _ = core.broadcasts.published(message)
            var writes = writeBuffers.take()
            core.fanOut(message, to: channels[channel].subscribers[...], now: time, writes: &writes)
            deliver(writes)
            writeBuffers.give(&writes)
        }
        // The cursors the devices moved: a forecast stores none.
        _ = core.broadcasts.takeCursors()
    }

    /// A broadcast's id: every subscriber is given the same push.
    static let broadcastMark = UInt64.max

    /// The id of the forecast's channel `index` (base64, as a channel id is).
    static func channelID(_ index: Int) -> ChannelID {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        var value = index
        var text = ""
        for _ in 0..<16 {
            text.append(alphabet[value % 64])
            value /= 64
        }
        return ChannelID(text)!
    }

    /// The pushes announcing version `index + 1` to one device's apps reach the gateway now.
    private func announce(_ index: Int, to device: Int) {
        let version = index + 1
        if templatesVersion != version {
            templatesVersion = version
            var parsed: [String: [PushNotification]] = [:]
            templates = apps.map { kind in
                kind.map { app in
                    if let known = parsed[app.bundleID] { return known }
                    let requests =
                        AnnouncementRequest.requests(app.announce, topic: app.bundleID, version: version)
                        + app.behaviour.surfaces.members.map {
                            AnnouncementRequest.reload($0, topic: app.bundleID, version: version)
                        }
                    let pushes = requests.compactMap { Self.notification($0, bundleID: app.bundleID, at: now) }
                    parsed[app.bundleID] = pushes
                    return pushes
                }
            }
            let publishedAt = publishTimes[index] / 1000
            liveTemplates = zip(apps, live).map { kindApps, kindLive in
                zip(kindApps, kindLive).map { app, live in
                    guard live.count > live.channels else { return nil }
                    let request = AnnouncementRequest.liveActivityUpdate(
                        topic: app.bundleID, version: version, priority: live.priority, timestamp: publishedAt)
                    return Self.notification(request, bundleID: app.bundleID, at: now)
                }
            }
        }
        announceLiveActivities(version: version, to: device)
        let hour = min(hourlyPushes.count - 1, Int((now - scenario.start.milliseconds) / 3_600_000))
        let kind = Int(kindOf[device])
        for slot in templates[kind].indices {
            for template in templates[kind][slot] {
                costs[kind].pushesSent += 1
                hourlyPushes[hour] += 1
                switch template.pushType {
                case .background: costs[kind].silentSent += 1
                case .widgets: costs[kind].reloadPushesSent[WidgetKitSurface.widget.index] += 1
                case .controls: costs[kind].reloadPushesSent[WidgetKitSurface.control.index] += 1
                default: costs[kind].alertsSent += 1
                }
                pushCounter += 1
                let push = PushNotification(
                    id: APNsID(high: UInt64(firstDevice + device), low: pushCounter),
                    deviceToken: template.deviceToken, topic: template.topic, bundleID: template.bundleID,
                    pushType: template.pushType, priority: template.priority, expiration: template.expiration,
                    collapseID: template.collapseID, notificationClass: template.notificationClass,
                    mismatch: template.mismatch, payload: template.payload, teamID: nil,
                    receivedAt: UnixTime(milliseconds: now))
                if isTraced(device) {
                    record(device, "push") {
                        $0.app = apps[kind][slot].bundleID
                        $0.pushType = push.pushType.rawValue
                        $0.version = version
                        $0.apnsID = push.id.description
                    }
                }
                var actions = policyBuffers.take()
                core.received(push, device: DeviceSlot(device), now: UnixTime(milliseconds: now), into: &actions)
                apply(actions)
                policyBuffers.give(&actions)
            }
        }
    }

    /// Each Live Activity of the device's apps that its backend updates by token gets the version's
    /// update, through the policy (its budget).
    private func announceLiveActivities(version: Int, to device: Int) {
        let kind = Int(kindOf[device])
        let hour = min(hourlyPushes.count - 1, Int((now - scenario.start.milliseconds) / 3_600_000))
        for (slot, app) in live[kind].enumerated() {
            guard let template = liveTemplates[kind][slot] else { continue }
            for activity in app.channels..<app.count {
                costs[kind].pushesSent += 1
                costs[kind].liveActivityUpdatesSent += 1
                hourlyPushes[hour] += 1
                let push = PushNotification(
                    id: Self.liveActivityID(
                        device: firstDevice + device, version: version, app: slot, activity: activity),
                    deviceToken: Self.activityTokens[activity], topic: template.topic, bundleID: template.bundleID,
                    pushType: template.pushType, priority: template.priority, expiration: template.expiration,
                    collapseID: nil, notificationClass: template.notificationClass, mismatch: template.mismatch,
                    payload: template.payload, teamID: nil, receivedAt: UnixTime(milliseconds: now))
                if isTraced(device) {
                    record(device, "push") {
                        $0.app = apps[kind][slot].bundleID
                        $0.pushType = "liveactivity"
                        $0.activity = activity
                        $0.version = version
                        $0.apnsID = push.id.description
                    }
                }
                var actions = policyBuffers.take()
                core.received(push, device: DeviceSlot(device), now: UnixTime(milliseconds: now), into: &actions)
                apply(actions)
                policyBuffers.give(&actions)
            }
        }
    }

    /// An announcement as the provider API makes it from the request (its own parsing and
    /// classification), addressed to a placeholder token (a forecast routes by device, not token).
    static func notification(_ request: AnnouncementRequest, bundleID: String, at now: Int64) -> PushNotification? {
        var head = RequestHead()
        head.method = "POST"
        head.path = RequestHead.devicePathPrefix + String(repeating: "0", count: 64)
        for (name, value) in request.headers {
            if let header = HeaderName(wireName: name) { head.set(header, value) }
        }
        guard case .success(let parsed) = head.parse(), let topic = parsed.topic else { return nil }
        guard
            case .success(let push) = parsed.notification(
                topic: topic, bundleID: bundleID, body: request.body, teamID: nil, now: UnixTime(milliseconds: now),
                id: APNsID(high: 0, low: 0))
        else { return nil }
        return push
    }

    // MARK: The gateway's decisions

    /// Carries out the policy's actions: deliveries reach their device (which acknowledges at once), and
    /// every decision is counted for its device's kind.
    private func apply(_ actions: [PolicyAction]) {
        for action in actions {
            switch action {
            case .deliver(let push, let rule, let wake):
                // Into the device's queue, as the hub does; what its window lets through is delivered.
                var writes = writeBuffers.take()
                let device = device(of: push.id)
                core.routeInstant(
                    push, rule: rule, wake: wake, to: DeviceSlot(device),
                    app: slot(of: push.bundleID, device).map { policyApps[Int(kindOf[device])][Int($0.index)] },
                    now: UnixTime(milliseconds: now), writes: &writes)
                deliver(writes)
                writeBuffers.give(&writes)
            case .hold(let id, let rule):
                let device = self.device(of: id)
                count(rule, device)
                if isTraced(device) {
                    record(device, "hold") {
                        $0.apnsID = id.description
                        $0.rule = rule.rawValue
                    }
                }
                armKeepAlive(device)
            case .discard(let id, let rule):
                let device = self.device(of: id)
                count(rule, device)
                if id.low & Self.liveActivityMark != 0 { costs[Int(kindOf[device])].liveActivityUpdatesDropped += 1 }
                if isTraced(device) {
                    record(device, "discard") {
                        $0.apnsID = id.description
                        $0.rule = rule.rawValue
                    }
                }
            case .deadlineMissed(let id):
                let device = self.device(of: id)
                costs[Int(kindOf[device])].deadlineMisses += 1
                if isTraced(device) { record(device, "deadline_missed") { $0.apnsID = id.description } }
            case .notWoken(let id, let reason):
                let device = self.device(of: id)
                if isTraced(device) {
                    record(device, "not_woken") {
                        $0.apnsID = id.description
                        $0.reason = reason.rawValue
                    }
                }
            case .completed, .completedLate:
                break
            }
        }
        armPolicyTimer()
    }

    /// The pushes the core let through reach their devices, which acknowledge each at once (what the
    /// acknowledgement lets through next, the same).
    private func deliver(_ writes: [CoreWrite]) {
        var writes = writes
        var index = 0
        while index < writes.count {
            let write = writes[index]
            index += 1
            let push = write.item.push
            let rule = write.item.rule
            let wake = write.item.wake
            let device = Int(write.device)
            if let stamp = push.broadcast {
                delivered(broadcast: write, stamp: stamp, &writes)
                continue
            }
            count(rule, device)
            if isTraced(device) {
                record(device, "deliver") {
                    $0.apnsID = push.id.description
                    $0.rule = rule.rawValue
                    $0.wake = wake
                }
            }
            let app = slot(of: push.bundleID, device)
            if !write.acknowledged {
                _ = core.acknowledged(
                    push.id, by: write.device, app: app.map { policyApps[Int(kindOf[device])][Int($0.index)] },
                    now: UnixTime(milliseconds: now), writes: &writes)
            }
            guard let app else { continue }
            if push.id.low & Self.liveActivityMark != 0 {
                let low = push.id.low
                let version = Int((low & ~Self.liveActivityMark) >> 16)
                // Stamped with its version's publication, as the backend stamps it (`announce`).
                deviceEvent(
                    device,
                    .liveActivityUpdated(
                        app: app, activity: Int(low & 0xFF), version: version,
                        timestamp: publishTimes[version - 1] / 1000))
            } else if let surface = WidgetKitSurface(push.pushType),
                let version = AnnouncementRequest.version(in: push.payload)
            {
                costs[Int(kindOf[device])].reloadPushesDelivered[surface.index] += 1
                deviceEvent(device, .widgetKitPushed(app: app, surface: surface, version: version))
            } else {
                deviceEvent(device, .pushDelivered(app: app, apnsID: push.id, silent: wake))
            }
        }
    }

    /// A broadcast written to a subscriber: acknowledged at once (its cursor moves), and the activity
    /// that follows the channel shows the version, stamped with its publication.
    private func delivered(broadcast write: CoreWrite, stamp: BroadcastStamp, _ writes: inout [CoreWrite]) {
        let device = Int(write.device)
        let time = UnixTime(milliseconds: now)
        _ = core.acknowledged(write.item.id, by: write.device, now: time, writes: &writes)
        _ = core.broadcasts.acknowledged(stamp, by: write.device)
        costs[Int(kindOf[device])].broadcastWrites += 1
        guard let channel = channelIndex[stamp.channel],
            let app = slot(of: channels[channel].bundleID, device),
            let version = AnnouncementRequest.version(in: write.item.push.payload)
        else { return }
        deviceEvent(
            device,
            .liveActivityUpdated(
                app: app, activity: channels[channel].activity, version: version,
                timestamp: publishTimes[version - 1] / 1000))
    }

    private func count(_ rule: Rule, _ device: Int) {
        costs[Int(kindOf[device])].rules[Self.rules.firstIndex(of: rule)!] += 1
    }

    /// Scanned, not hashed: a `Rule` hashes its raw value, a string.
    private static let rules = Rule.allCases

    /// Push ids carry their device's fleet-wide index in their high half.
    private func device(of id: APNsID) -> Int { Int(id.high) - firstDevice }

    /// A device with held pushes that a keep-alive would release sends its next keep-alive into the
    /// policy. Others send keep-alives that change nothing (expired pushes are the policy timer's), and
    /// they are not simulated: a device is looked at again when a push is held, or its conditions or an
    /// app's state change (a force-quit app relaunched, Low Power Mode ending).
    private func armKeepAlive(_ device: Int) {
        guard keepAliveAt[device] == .max, let from = Self.releases(&core.policy, device, now) else { return }
        let at = keepAlives[device].first(atOrAfter: from).milliseconds
        keepAliveAt[device] = at
        queue.schedule(at: at, .keepAlive, target: UInt32(device))
    }

    /// The policy's timers run on the hub's tick (every 200 ms), as in the gateway.
    private func armPolicyTimer() {
        guard let next = Self.nextTimer(&core.policy) else { return }
        let tick: Int64 = 200
        let start = scenario.start.milliseconds
        var at = max(next, now + 1)
        at = start + ((at - start + tick - 1) / tick) * tick
        guard at < policyTimerAt else { return }
        policyTimerAt = at
        queue.schedule(at: at, .policyTimer, target: 0)
    }

    // MARK: The devices

    private func deviceEvent(_ device: Int, _ event: RuntimeEvent) {
        if isTraced(device) { traceEvent(device, event) }
        var link = ShardLink(shard: self, device: device)
        var actions = runtimeBuffers.take()
        iphones[device].handle(event, at: UnixTime(milliseconds: now), link: &link, into: &actions)
        after(device, actions)
        runtimeBuffers.give(&actions)
    }

    /// What the device's runtime did: its messages go to the gateway, every action to the ledger; its
    /// deadline is filed again.
    private func after(_ device: Int, _ actions: [RuntimeAction]) {
        let kind = Int(kindOf[device])
        let time = UnixTime(milliseconds: now)
        var decided = policyBuffers.take()
        for action in actions {
            ledger.record(action, at: time, profileIndex: ledgerIndex[kind])
            if isTraced(device) { traceAction(device, action) }
            decided.removeAll(keepingCapacity: true)
            switch action {
            case .woken:
                hourlyWakes[min(hourlyWakes.count - 1, Int((now - scenario.start.milliseconds) / 3_600_000))] += 1
                continue
            case .appState(let app, let state):
                core.policy.appStateChanged(
                    device: DeviceSlot(device), app: policyApps[kind][Int(app.index)], to: state, now: time,
                    into: &decided)
            case .complete(let id, let app, let result):
                core.policy.completed(
                    device: DeviceSlot(device), app: policyApps[kind][Int(app.index)], id: id, result: result,
                    now: time, into: &decided)
            case .wakeRefused(let app, let id, let reason):
                core.policy.notWoken(
                    device: DeviceSlot(device), app: policyApps[kind][Int(app.index)], id: id, reason: reason,
                    now: time, into: &decided)
            case .conditions(let lowPowerMode, let refreshOff, let debugger, let others):
                core.policy.conditionsChanged(
                    device: DeviceSlot(device), lowPowerMode: lowPowerMode, backgroundAppRefreshOff: refreshOff,
                    debuggerAttached: debugger, otherAppsWakesPerDay: others, now: time, into: &decided)
            case .rebooted:
                core.policy.rebooted(device: DeviceSlot(device), now: time)
            default:
                continue
            }
            apply(decided)
            armKeepAlive(device)
        }
        policyBuffers.give(&decided)
        fileDeadline(device)
    }

    /// Read through `inout`: a class's array element read in place (its getter copies the whole iPhone,
    /// a retain per field).
    private static func deadline(of iphone: inout SimulatedIPhone) -> Int64 {
        iphone.nextDeadline?.milliseconds ?? .max
    }

    /// From when a keep-alive of `device` would release something (now, or when a herd window or a
    /// daily budget's period ends), or nil.
    private static func releases(_ engine: inout ThrottleEngine, _ device: Int, _ now: Int64) -> UnixTime? {
        engine.nextReleasingKeepAlive(device: DeviceSlot(device), now: UnixTime(milliseconds: now))
    }

    private static func nextTimer(_ engine: inout ThrottleEngine) -> Int64? {
        engine.nextTimer?.milliseconds
    }

    private func fileDeadline(_ device: Int) {
        let next = Self.deadline(of: &iphones[device])
        guard next != deadlineAt[device] else { return }
        deadlineAt[device] = next
        queue.setDeadline(UInt32(device), at: next == .max ? nil : max(next, now))
    }

    // MARK: Transfers

    fileprivate func startTransfer(_ device: Int, _ request: TransferRequest, from: Int64) {
        let size: Int64
        switch request.content {
        case .manifest: size = Int64(scenario.link.manifestBytes)
        case .item:
            let app = apps[Int(kindOf[device])][Int(request.app.index)]
            size = Int64(app.behaviour.itemBytes ?? scenario.itemBytes)
        }
        let from = min(from, size)
        let latency = scenario.link.latency(device: firstDevice + device, transfer: request.id, seed: scenario.seed)
        let endsAt =
            now + scenario.link.milliseconds(bytes: size - from, slowdown: request.slowdown, latency: latency)
        let running = Running(
            request: request, from: from, size: size, startedAt: now, endsAt: endsAt, latency: latency)
        // A resumed transfer keeps its id: it replaces the paused one's entry.
        if let index = runningIndex(device, request.id) {
            transfers[device][index] = running
        } else {
            transfers[device].append(running)
        }
        queue.schedule(
            at: endsAt, .transferEnd, target: UInt32(device), argument: Int32(truncatingIfNeeded: request.id))
    }

    fileprivate func cancelTransfer(_ device: Int, _ id: Int) -> Int64? {
        guard let index = runningIndex(device, id) else { return nil }
        let running = transfers[device].remove(at: index)
        return running.from
            + scenario.link.bytes(
                after: now - running.startedAt, of: running.size - running.from, slowdown: running.request.slowdown,
                latency: running.latency)
    }

    private func transferEnded(_ device: Int, id: Int, at time: Int64) {
        guard let index = runningIndex(device, id), transfers[device][index].endsAt == time else { return }
        let running = transfers[device].remove(at: index)
        let result: TransferResult
        switch running.request.content {
        case .manifest:
            // The server answers with what is newest when the request reaches it.
            let asked = running.startedAt + running.latency / 2
            result = .manifest(version: newestVersion(at: asked) ?? 0)
        case .item(let version):
            result = .item(version: version, bytes: running.size)
        }
        var background = false
        if case .background = running.request.session { background = true }
        ledger.recordTransfer(
            background: background, bytes: running.size - running.from, milliseconds: time - running.startedAt,
            succeeded: true, profileIndex: ledgerIndex[Int(kindOf[device])])
        deviceEvent(device, .transferFinished(id: id, result: result))
    }

    /// The newest version published at or before `at` (versions are numbered from 1 in publish order).
    func newestVersion(at: Int64) -> Int? {
        let count = publishTimes.countAtOrBefore(at)
        return count == 0 ? nil : count
    }

    private func runningIndex(_ device: Int, _ id: Int) -> Int? {
        transfers[device].firstIndex { $0.request.id == id }
    }

    /// The slot of app `bundleID` on `device` (a device has a handful: scanned).
    private func slot(of bundleID: String, _ device: Int) -> AppSlot? {
        apps[Int(kindOf[device])].firstIndex { $0.bundleID == bundleID }.map(AppSlot.init)
    }

    // MARK: Trace

    /// The bundle id of app `slot` on `device`.
    private func name(_ slot: AppSlot, _ device: Int) -> String { apps[Int(kindOf[device])][Int(slot.index)].bundleID }

    private func isTraced(_ device: Int) -> Bool {
        tracing && scenario.traced.contains(firstDevice + device)
    }

    private func record(_ device: Int, _ event: String, _ fill: (inout ForecastTraceLine) -> Void = { _ in }) {
        var line = ForecastTraceLine(
            t: Double(now - scenario.start.milliseconds) / 1000, device: firstDevice + device,
            profile: scenario.kinds[Int(kindOf[device])].name, event: event)
        fill(&line)
        trace.append(TraceLine(time: now, device: firstDevice + device, order: trace.count, line: line))
    }

    private func traceEvent(_ device: Int, _ event: RuntimeEvent) {
        switch event {
        case .userOpened(let app): record(device, "user_opened") { $0.app = name(app, device) }
        case .userLeft(let app): record(device, "user_left") { $0.app = name(app, device) }
        case .userForceQuit(let app): record(device, "user_force_quit") { $0.app = name(app, device) }
        case .screen(let on): record(device, "screen") { $0.on = on }
        case .lowPowerMode(let on): record(device, "low_power_mode") { $0.on = on }
        case .backgroundAppRefresh(let on): record(device, "background_app_refresh") { $0.on = on }
        case .widgetKitPushed(let app, let surface, let version):
            record(device, "\(surface.rawValue)_push") {
                $0.app = name(app, device)
                $0.version = version
            }
        case .memoryPressure(let app): record(device, "memory_pressure") { $0.app = name(app, device) }
        case .rebooted: record(device, "reboot")
        case .pushDelivered(let app, let id, let silent):
            record(device, "push_delivered") {
                $0.app = name(app, device)
                $0.apnsID = id.description
                $0.silent = silent
            }
        case .locationChanged(let app): record(device, "location_changed") { $0.app = name(app, device) }
        case .liveActivityUpdated(let app, let activity, let version, let timestamp):
            record(device, "live_activity_update") {
                $0.app = name(app, device)
                $0.activity = activity
                $0.version = version
                $0.timestamp = timestamp
            }
        case .transferFinished(let id, let result):
            record(device, "transfer_finished") { line in
                line.transfer = id
                switch result {
                case .manifest(let version): line.manifestVersion = version
                case .item(let version, let bytes):
                    line.itemVersion = version
                    line.bytes = Int64(bytes)
                case .failed(let bytes):
                    line.failed = true
                    line.bytes = Int64(bytes)
                }
            }
        case .tick: break
        }
    }

    /// A freshness sample's (the version held or shown set): the newest published by now, and whether it
    /// was fresh (nothing published yet: fresh).
    private func sample(_ line: inout ForecastTraceLine) {
        let shown = line.versionShown ?? line.versionHeld
        let newest = newestVersion(at: now)
        line.newestPublished = newest
        line.fresh = newest.map { newest in shown.map { $0 >= newest } ?? false } ?? true
    }

    private func traceAction(_ device: Int, _ action: RuntimeAction) {
        switch action {
        case .appState(let app, let state):
            record(device, "app_state") {
                $0.app = name(app, device)
                $0.state = state.rawValue
            }
        case .widgetKitReloaded(let app, let surface, let version):
            record(device, "\(surface.rawValue)_updated") {
                $0.app = name(app, device)
                $0.version = version
            }
        case .widgetKitViewed(let app, let surface, let shown):
            record(device, "\(surface.rawValue)_viewed") {
                $0.app = name(app, device)
                $0.versionShown = shown
                sample(&$0)
            }
        case .complete(let id, let app, let result):
            record(device, "complete") {
                $0.app = name(app, device)
                $0.apnsID = id.description
                $0.result = result.rawValue
            }
        case .startTransfer(let request):
            var session = "foreground"
            if case .background(let discretionary) = request.session {
                session = discretionary ? "background_discretionary" : "background"
            }
            let content: String
            switch request.content {
            case .manifest: content = "manifest"
            case .item(let version): content = "item \(version)"
            }
            record(device, "transfer_started") {
                $0.app = name(request.app, device)
                $0.transfer = request.id
                $0.content = content
                $0.session = session
                $0.from = Int64(max(0, request.resumeFrom))
            }
        case .cancelTransfer(let id): record(device, "transfer_cancelled") { $0.transfer = id }
        case .pauseTransfer(let id): record(device, "transfer_paused") { $0.transfer = id }
        case .resumeTransfer(let id): record(device, "transfer_resumed") { $0.transfer = id }
        case .moveToBackgroundSession(let from, let to):
            record(device, "moved_to_background_session") {
                $0.transfer = from
                $0.to = to.id
            }
        case .woken(let app, let kind):
            var why: String?
            if kind == .fetch, let schedule = iphones[device].runtime.app(app)?.fetch {
                why = schedule.plannedBy.rawValue
            }
            record(device, "woken") {
                $0.app = name(app, device)
                $0.kind = kind.name
                $0.fetchPlannedBy = why
            }
        case .terminated(let app, let cause):
            record(device, "terminated") {
                $0.app = name(app, device)
                $0.cause = cause.rawValue
            }
        case .relaunched(let app): record(device, "relaunched") { $0.app = name(app, device) }
        case .opened(let app, let held):
            record(device, "opened") {
                $0.app = name(app, device)
                $0.versionHeld = held
                sample(&$0)
            }
        case .contentUpdated(let app, let version, let by):
            record(device, "content_updated") {
                $0.app = name(app, device)
                $0.version = version
                $0.by = by?.name ?? "foreground"
            }
        case .conditions(let lowPower, let refreshOff, let debugger, let others):
            record(device, "conditions") {
                $0.lowPowerMode = lowPower
                $0.backgroundAppRefreshOff = refreshOff
                $0.debuggerAttached = debugger
                $0.otherAppsWakesPerDay = others
            }
        case .rebooted: record(device, "rebooted")
        case .wakeRefused(let app, let id, let reason):
            record(device, "wake_refused") {
                $0.app = name(app, device)
                $0.apnsID = id.description
                $0.reason = reason.rawValue
            }
        case .activityUpdated(let app, let activity, let version):
            record(device, "activity_updated") {
                $0.app = name(app, device)
                $0.activity = activity
                $0.version = version
            }
        case .activityViewed(let app, let activity, let shown):
            record(device, "activity_viewed") {
                $0.app = name(app, device)
                $0.activity = activity
                $0.versionShown = shown
                sample(&$0)
            }
        }
    }
}

/// A device's transfers in a forecast: computed from the link model, ended by an event at their end time.
private struct ShardLink: TransferLink {
    // unowned(unsafe): a link is made for one call into the iPhone, by the shard itself, and dropped
    // before that call returns, so the shard outlives it; a strong reference cost a retain and a
    // release per event.
    unowned(unsafe) let shard: ForecastShard
    let device: Int

    mutating func start(_ request: TransferRequest, from: Int64, at now: UnixTime) {
        shard.startTransfer(device, request, from: from)
    }

    mutating func cancel(_ id: Int, at now: UnixTime) -> Int64? {
        shard.cancelTransfer(device, id)
    }
}
