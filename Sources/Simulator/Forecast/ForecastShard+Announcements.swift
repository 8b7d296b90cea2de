import DeviceRuntime
import GatewayCore
import PushModel
import PushPolicy

/// Publications: each version broadcast on the channels and announced to every device's apps, as their
/// backends do.
extension ForecastShard {
    /// Version `index + 1` is out: every device's announcing apps get their backend's pushes, at once or
    /// spread over `announcementSeconds` (device by device, fleet order). The first too: a real run
    /// publishes and announces it once every device has its tokens (`pushgate simulate`, the demo), and a
    /// forecast's devices have theirs from the start.
    func publish(_ index: Int) {
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
    func broadcast(version: Int) {
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
    func announce(_ index: Int, to device: Int) {
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
                send(push, to: device, version: version)
            }
        }
    }

    /// A backend's push reaches the gateway: traced, then decided (and carried out) as the hub does.
    func send(_ push: PushNotification, to device: Int, version: Int, activity: Int? = nil) {
        if isTraced(device) {
            record(device, "push") {
                $0.app = push.bundleID
                $0.pushType = push.pushType.rawValue
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

    /// Each Live Activity of the device's apps that its backend updates by token gets the version's
    /// update, through the policy (its budget).
    func announceLiveActivities(version: Int, to device: Int) {
        let kind = Int(kindOf[device])
        let hour = min(hourlyPushes.count - 1, Int((now - scenario.start.milliseconds) / 3_600_000))
        for (slot, app) in live[kind].enumerated() {
            guard let template = liveTemplates[kind][slot] else { continue }
            for activity in app.channels..<app.count {
                costs[kind].pushesSent += 1
                costs[kind].liveActivityUpdatesSent += 1
                hourlyPushes[hour] += 1
                pushCounter += 1
                let push = PushNotification(
                    id: APNsID(high: UInt64(firstDevice + device), low: pushCounter),
                    deviceToken: Self.activityTokens[activity], topic: template.topic, bundleID: template.bundleID,
                    pushType: template.pushType, priority: template.priority, expiration: template.expiration,
                    collapseID: nil, notificationClass: template.notificationClass, mismatch: template.mismatch,
                    payload: template.payload, teamID: nil, receivedAt: UnixTime(milliseconds: now))
                liveUpdatesInFlight.insert(push.id)
                send(push, to: device, version: version, activity: activity)
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
}
