import DeviceRuntime
import NIOCore
import ProviderAuth
import ProviderClient
import PushModel

/// What a backend sends when it publishes a new version of its content: to every device token of an app
/// that announces, a silent push (so the app fetches in the background) and/or an alert (so the user
/// sees it), as that app's profile says. `pushes` plans them (pure); `send` POSTs them to a provider API.
public enum ContentAnnouncer {
    /// How an app's backend announces a version.
    public struct Strategy: Sendable, Equatable {
        public var silent: Bool
        public var alert: Bool
        /// The app's widget and control: a push for each goes with each version (`AnnouncementRequest.reload`).
        public var surfaces: WidgetKitSurfaces
        public init(silent: Bool, alert: Bool, surfaces: WidgetKitSurfaces = []) {
            self.silent = silent
            self.alert = alert
            self.surfaces = surfaces
        }
    }

    public struct Push: Sendable, Equatable {
        public var target: PushTarget
        public var silent: Bool
        public var headers: [(String, String)]
        public var body: [UInt8]

        /// Where it is POSTed: a broadcast to its app's broadcasts, anything else to its token.
        public var path: String {
            target.activity == PushTarget.channelMark
                ? "/4/broadcasts/apps/\(target.topic)" : "/3/device/\(target.token)"
        }

        public static func == (a: Push, b: Push) -> Bool {
            a.target == b.target && a.silent == b.silent && a.body == b.body
                && a.headers.elementsEqual(b.headers, by: { $0 == $1 })
        }
    }

    /// How an app's backend updates its kept Live Activities (`AppProfile.live_activities`): an update
    /// at `priority` to each activity's own token, and a broadcast on each of `channels`.
    public struct LiveActivities: Sendable, Equatable {
        public var priority: Int
        public var channels: [String]
        public init(priority: Int, channels: [String]) {
            self.priority = priority
            self.channels = channels
        }
    }

    /// What the announcement of `version` sent, by answer.
    public struct Outcome: Sendable, Equatable, Codable {
        public var version: Int
        public var silent = 0
        public var alerts = 0
        /// Live Activity updates to activities' tokens, and broadcasts.
        public var liveActivityUpdates = 0
        public var broadcasts = 0
        /// Widget and control pushes (`apns-push-type: widgets`, `controls`).
        public var widgets = 0
        public var controls = 0
        public var accepted = 0
        /// Answers other than 200 (`status reason`) and failures, with their counts.
        public var refused: [String: Int] = [:]
        /// When the sending began (ms since 1970), and how long it took to the last answer: the
        /// backend's fan-out, which a forecast replays (`ForecastScenario.announcementSeconds`).
        public var sentAt: Int64 = 0
        public var milliseconds: Int64 = 0
    }

    /// The pushes announcing `version`, for each target whose topic has a strategy. The silent push
    /// carries `apns-collapse-id: content`, so a newer announcement replaces one still held.
    public static func pushes(version: Int, targets: [PushTarget], strategies: [String: Strategy]) -> [Push] {
        var pushes: [Push] = []
        for target in targets {
            guard let strategy = strategies[target.topic] else { continue }
            let announce: AppProfile.Announcement =
                strategy.silent ? (strategy.alert ? .silent_and_alert : .silent) : (strategy.alert ? .alert : .none)
            let reloads = strategy.surfaces.members.map {
                AnnouncementRequest.reload($0, topic: target.topic, version: version)
            }
            for request in AnnouncementRequest.requests(announce, topic: target.topic, version: version) + reloads {
                pushes.append(
                    Push(target: target, silent: request.silent, headers: request.headers, body: request.body))
            }
        }
        return pushes
    }

    /// The Live Activity updates announcing `version` (published at `timestamp`, seconds): one to each
    /// kept activity's update token (`update:` + `AppProfile.keptActivityID` targets) of an app in `apps`, and one
    /// broadcast on each of the apps' channels.
    public static func liveActivityPushes(
        version: Int, timestamp: Int64, targets: [PushTarget], apps: [String: LiveActivities]
    ) -> [Push] {
        var pushes: [Push] = []
        for target in targets {
            guard let app = apps[target.topic], let activity = target.activity, activity.hasPrefix("update:"),
                AppProfile.keptActivityIndex(activity.dropFirst("update:".count), of: target.topic) != nil
            else { continue }
            let request = AnnouncementRequest.liveActivityUpdate(
                topic: target.topic, version: version, priority: app.priority, timestamp: timestamp)
            pushes.append(Push(target: target, silent: false, headers: request.headers, body: request.body))
        }
        for (bundleID, app) in apps.sorted(by: { $0.key < $1.key }) {
            for channel in app.channels {
                let request = AnnouncementRequest.broadcast(channelID: channel, version: version, timestamp: timestamp)
                pushes.append(
                    Push(
                        target: .channel(channel, bundleID: bundleID), silent: false, headers: request.headers,
                        body: request.body))
            }
        }
        return pushes
    }

    /// POSTs the pushes over one HTTP/2 connection, `concurrency` streams at a time, with a provider
    /// token from `signer` when given.
    public static func send(
        _ pushes: [Push], version: Int, host: String, port: Int, security: ProviderClient.Security,
        signer: ProviderTokenSigner?, now: UnixTime, group: any EventLoopGroup, concurrency: Int = 64
    ) async -> Outcome {
        var outcome = Outcome(version: version)
        outcome.sentAt = now.milliseconds
        let started = ContinuousClock.now
        func elapsed() -> Int64 {
            let duration = ContinuousClock.now - started
            return duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        }
        outcome.silent = pushes.filter(\.silent).count
        outcome.broadcasts = pushes.count { $0.target.activity == PushTarget.channelMark }
        outcome.liveActivityUpdates = pushes.count { $0.target.activity?.hasPrefix("update:") == true }
        outcome.widgets = pushes.count { $0.headers.contains { $0 == ("apns-push-type", "widgets") } }
        outcome.controls = pushes.count { $0.headers.contains { $0 == ("apns-push-type", "controls") } }
        outcome.alerts =
            pushes.count - outcome.silent - outcome.broadcasts - outcome.liveActivityUpdates - outcome.widgets
            - outcome.controls
        guard !pushes.isEmpty else { return outcome }
        let client: ProviderClient
        do {
            client = try await ProviderClient.connect(host: host, port: port, security: security, group: group)
        } catch {
            outcome.refused["cannot connect: \(error)"] = pushes.count
            outcome.milliseconds = elapsed()
            return outcome
        }
        let authorization = signer.flatMap { try? "bearer " + $0.token(issuedAt: now) }
        let workers = max(1, min(concurrency, pushes.count))
        let answers = await withTaskGroup(of: [String: Int].self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var answers: [String: Int] = [:]
                    for index in stride(from: worker, to: pushes.count, by: workers) {
                        let push = pushes[index]
                        var headers = push.headers
                        if let authorization { headers.append(("authorization", authorization)) }
                        do {
                            let response = try await client.post(path: push.path, headers: headers, body: push.body)
                            answers[
                                response.status == 200 ? "200" : "\(response.status) \(response.bodyText)", default: 0] +=
                                1
                        } catch {
                            answers["failed: \(error)", default: 0] += 1
                        }
                    }
                    return answers
                }
            }
            var all: [String: Int] = [:]
            for await part in group { all.merge(part, uniquingKeysWith: +) }
            return all
        }
        await client.close()
        outcome.accepted = answers["200", default: 0]
        outcome.refused = answers.filter { $0.key != "200" }
        outcome.milliseconds = elapsed()
        return outcome
    }
}
