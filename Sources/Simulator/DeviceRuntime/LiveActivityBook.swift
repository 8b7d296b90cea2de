import PushModel

/// One ActivityKit push as the device reads its `aps` (docs/live-activities.md): the event, the
/// timestamp that orders updates, the content and the dates. The shell parses the JSON; a payload it
/// cannot read as one is `nil` and is not applied.
public struct LiveActivityPush: Sendable, Equatable {
    public enum Event: String, Sendable { case start, update, end }

    public var event: Event
    /// Seconds since 1970 (`aps.timestamp`).
    public var timestamp: Int64
    /// `aps.content-state`, as JSON text.
    public var contentState: String?
    public var staleDate: Int64?
    public var dismissalDate: Int64?
    public var relevanceScore: Double?
    /// A start's `attributes-type`.
    public var attributesType: String?
    /// A start's `attributes` (as JSON text), which the activity is built from.
    public var attributes: String?
    /// A start's `input-push-channel` (iOS 18): the channel the started activity listens on, instead of
    /// an update token of its own.
    public var inputPushChannel: String?

    public init(
        event: Event, timestamp: Int64, contentState: String? = nil, staleDate: Int64? = nil,
        dismissalDate: Int64? = nil, relevanceScore: Double? = nil, attributesType: String? = nil,
        attributes: String? = nil, inputPushChannel: String? = nil
    ) {
        self.event = event
        self.timestamp = timestamp
        self.contentState = contentState
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.attributesType = attributesType
        self.attributes = attributes
        self.inputPushChannel = inputPushChannel
    }
}

/// A device's Live Activities, as a pure state machine: which token starts which attributes type, which
/// token updates which activity, and each activity's content in timestamp order, as iOS keeps them
/// (ActivityKit: "Set the `timestamp` … to allow the system to always display the most recent ActivityKit
/// push update"; a push that arrives after the activity ended is ignored). No clock: time comes in.
public struct LiveActivityBook: Sendable, Equatable {
    public struct Activity: Sendable, Equatable {
        public var id: String
        public var bundleID: String
        public var attributesType: String
        /// Its update token, once the gateway issued it.
        public var updateToken: String?
        /// The timestamp of the content shown (0: none from a push yet).
        public var timestamp: Int64
        public var contentState: String?
        public var staleDate: Int64?
        public var relevanceScore: Double?
        /// When it ended (seconds), and when the system removes it from the Lock Screen.
        public var endedAt: Int64?
        public var dismissAt: Int64?
        public var updatesApplied: Int
        /// The broadcast channel it was started on (`pushType: .channel(id)`): its updates come from the
        /// channel's broadcasts, not from a token of its own.
        public var channel: String?

        /// Past its stale date at `now` (seconds), and not ended.
        public func isStale(at now: Int64) -> Bool { endedAt == nil && (staleDate.map { now >= $0 } ?? false) }
    }

    /// What a push did.
    public enum Outcome: Sendable, Equatable {
        /// A push-to-start started an activity: the device asks for its update token.
        case started(activityID: String, bundleID: String)
        /// A push-to-start with `input-push-channel` started an activity on that channel: the device
        /// subscribes it to the channel (no update token).
        case startedOnChannel(activityID: String, bundleID: String, channel: String)
        case updated(activityID: String)
        case ended(activityID: String)
        /// Older than (or as old as) the content shown: ignored, as iOS ignores it.
        case ignoredOlder(activityID: String)
        /// The activity had ended: ignored.
        case ignoredEnded(activityID: String)
        /// Not applied: a token the device does not know for Live Activities, an event that does not fit
        /// it (an update to a push-to-start token), or a payload it could not read.
        case notApplied(reason: String)
    }

    /// How long an ended activity stays on the Lock Screen without a dismissal date (ActivityKit: up to
    /// four hours).
    public static let defaultDismissalSeconds: Int64 = 4 * 3600

    public private(set) var activities: [String: Activity] = [:]
    /// What a push-to-start token starts: an activity of this app and attributes type.
    public struct StartToken: Sendable, Equatable {
        public var bundleID: String
        public var attributesType: String
    }

    /// Push-to-start tokens, by token.
    public private(set) var pushToStart: [String: StartToken] = [:]
    private var byUpdateToken: [String: String] = [:]
    /// The iOS the device runs: a start with `input-push-channel` needs 18 (ActivityKit's channels).
    public let iosVersion: Int

    /// The iOS where an activity can listen on a broadcast channel (`input-push-channel`, `.channel(id)`).
    public static let channelsSince = 18

    public init(iosVersion: Int = LiveActivityBook.channelsSince) { self.iosVersion = iosVersion }

    // MARK: Events

    /// The gateway issued the app's push-to-start token for an attributes type.
    public mutating func pushToStartToken(_ token: String, bundleID: String, attributesType: String) {
        pushToStart[token] = StartToken(bundleID: bundleID, attributesType: attributesType)
    }

    /// The app started an activity itself (in the foreground): it asks for its update token next.
    public mutating func startLocally(
        id: String, bundleID: String, attributesType: String, contentState: String?, now: Int64
    ) {
        activities[id] = Activity(
            id: id, bundleID: bundleID, attributesType: attributesType, updateToken: nil, timestamp: 0,
            contentState: contentState, updatesApplied: 0)
    }

    /// The app started an activity on a broadcast channel (`pushType: .channel(id)`, iOS 18): the
    /// channel's broadcasts update it; it has no update token.
    public mutating func startOnChannel(
        id: String, bundleID: String, attributesType: String, channel: String, contentState: String?
    ) {
        activities[id] = Activity(
            id: id, bundleID: bundleID, attributesType: attributesType, updateToken: nil, timestamp: 0,
            contentState: contentState, updatesApplied: 0, channel: channel)
    }

    /// A broadcast on `channel` arrived: applied to every activity started on it, each as an update to its
    /// own token would be (in timestamp order; none after its end). A broadcast cannot start an activity
    /// ([LA]); `push` nil: not an ActivityKit payload.
    public mutating func receivedBroadcast(_ push: LiveActivityPush?, channel: String, now: Int64) -> [Outcome] {
        guard let push else { return [.notApplied(reason: "not an ActivityKit payload (aps.event, aps.timestamp)")] }
        if push.event == .start { return [.notApplied(reason: "a broadcast cannot start a Live Activity")] }
        let ids = activities.values.filter { $0.channel == channel }.map(\.id).sorted()
        guard !ids.isEmpty else { return [.notApplied(reason: "no Live Activity is on channel \(channel)")] }
        return ids.map { apply(push, to: $0, now: now) }
    }

    /// The gateway issued an activity's update token.
    public mutating func updateToken(_ token: String, activityID: String) {
        guard activities[activityID] != nil else { return }
        if let old = activities[activityID]?.updateToken { byUpdateToken.removeValue(forKey: old) }
        activities[activityID]?.updateToken = token
        byUpdateToken[token] = activityID
    }

    /// An ActivityKit push arrived, sent to `token`; `push` nil: its payload was not one. `newID` names
    /// an activity a push-to-start starts.
    public mutating func received(
        _ push: LiveActivityPush?, token: String, now: Int64, newID: () -> String
    ) -> Outcome {
        guard let push else { return .notApplied(reason: "not an ActivityKit payload (aps.event, aps.timestamp)") }
        if let start = pushToStart[token] {
            let (bundleID, attributesType) = (start.bundleID, start.attributesType)
            guard push.event == .start else {
                return .notApplied(reason: "\(push.event.rawValue) sent to a push-to-start token")
            }
            // ActivityKit builds the activity from both ("Construct the payload that starts a Live
            // Activity"); APNs documents no reason to refuse a start without them, so it is accepted and
            // not started here.
            guard let named = push.attributesType, push.attributes != nil else {
                return .notApplied(reason: "a start needs attributes-type and attributes")
            }
            guard named == attributesType else {
                return .notApplied(reason: "attributes-type \(named) sent to the token of \(attributesType)")
            }
            if push.inputPushChannel != nil, iosVersion < Self.channelsSince {
                return .notApplied(
                    reason: "input-push-channel needs iOS \(Self.channelsSince) (this device runs iOS \(iosVersion))")
            }
            let id = newID()
            activities[id] = Activity(
                id: id, bundleID: bundleID, attributesType: attributesType, updateToken: nil,
                timestamp: push.timestamp, contentState: push.contentState, staleDate: push.staleDate,
                relevanceScore: push.relevanceScore, updatesApplied: 1, channel: push.inputPushChannel)
            if let channel = push.inputPushChannel {
                return .startedOnChannel(activityID: id, bundleID: bundleID, channel: channel)
            }
            return .started(activityID: id, bundleID: bundleID)
        }
        guard let id = byUpdateToken[token], activities[id] != nil else {
            return .notApplied(reason: "no Live Activity has this token")
        }
        if activities[id]?.endedAt != nil { return .ignoredEnded(activityID: id) }
        if push.event == .start { return .notApplied(reason: "start sent to an update token") }
        return apply(push, to: id, now: now)
    }

    /// An update or an end to activity `id`, in timestamp order, none after its end.
    private mutating func apply(_ push: LiveActivityPush, to id: String, now: Int64) -> Outcome {
        guard var activity = activities[id] else { return .notApplied(reason: "no Live Activity \(id)") }
        if activity.endedAt != nil { return .ignoredEnded(activityID: id) }
        guard push.timestamp > activity.timestamp else { return .ignoredOlder(activityID: id) }
        activity.timestamp = push.timestamp
        if let content = push.contentState { activity.contentState = content }
        if let stale = push.staleDate { activity.staleDate = stale }
        if let score = push.relevanceScore { activity.relevanceScore = score }
        activity.updatesApplied += 1
        if push.event == .end {
            activity.endedAt = now
            activity.dismissAt = min(
                push.dismissalDate ?? (now + Self.defaultDismissalSeconds), now + Self.defaultDismissalSeconds)
        }
        activities[id] = activity
        return push.event == .end ? .ended(activityID: id) : .updated(activityID: id)
    }

    /// Removes ended activities whose dismissal time has come; returns their ids (their update tokens
    /// are forgotten: a later push to one is not applied).
    public mutating func advance(to now: Int64) -> [String] {
        let due = activities.values.filter { ($0.dismissAt ?? .max) <= now }.map(\.id).sorted()
        for id in due {
            if let token = activities.removeValue(forKey: id)?.updateToken { byUpdateToken.removeValue(forKey: token) }
        }
        return due
    }
}
