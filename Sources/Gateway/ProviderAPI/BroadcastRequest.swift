import ProviderAuth
import PushIntake
import PushModel

/// One broadcast request on the provider API (`POST /4/broadcasts/apps/<bundle id>`, Apple's "Sending
/// broadcast push notification requests to APNs"; docs/live-activities.md), decided apart from HTTP/2
/// at the end of its stream, one rule at a time: the path and method, the bundle id, the credential, the
/// headers, the channel, then the payload. No I/O; time is an argument.
struct BroadcastRequest {
    static let pathPrefix = "/4/broadcasts/"
    /// Apple: "The maximum payload size for a broadcast push notification is 5 KB (5120 bytes)".
    static let maximumPayload = 5_120

    /// The head as the header block read it (`HeaderName`'s table, the same pass as a unicast's).
    var head: RequestHead
    var body: [UInt8] = []

    init(head: RequestHead) { self.head = head }

    var path: String { head.path ?? "" }
    var requestID: String? { head.requestID }

    /// Collects body bytes, up to one past the limit (enough to refuse it as too large).
    mutating func append(_ bytes: some Collection<UInt8>) {
        let room = Self.maximumPayload + 1 - body.count
        if room > 0 { body += bytes.prefix(room) }
    }

    /// `/4/broadcasts/apps/<bundle id>`: the bundle id.
    static func bundleID(of path: String) -> Substring? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "4", parts[2] == "broadcasts", parts[3] == "apps",
            !parts[4].isEmpty
        else { return nil }
        return parts[4]
    }

    func decide(
        id: APNsID, identity: ConnectionIdentity, authentication: inout ConnectionAuthentication,
        context: ProviderContext, channels: any ChannelDirectory, now: UnixTime
    ) -> Result<BroadcastSubmission, BroadcastReason> {
        guard let bundle = Self.bundleID(of: path) else { return .failure(.badPath) }
        guard head.method == "POST" else { return .failure(.methodNotAllowed) }
        // The bundle id itself: a push-type suffix (`.push-type.liveactivity`) is not one ([ER] TopicDisallowed).
        guard let topic = Topic(String(bundle)) else { return .failure(.badPath) }
        guard !topic.value.contains(".push-type.") else { return .failure(.topicDisallowed) }
        let bundleID = topic.value
        let teamID: String?
        switch ChannelAuthorization.authorize(
            bundleID: bundleID, authorization: head.authorization, identity: identity, authentication: &authentication,
            context: context, now: now)
        {
        case .failure(let reason): return .failure(reason)
        case .success(let team): teamID = team
        }
        if let requestID, APNsID(header: requestID) == nil { return .failure(.badMessageId) }
        // The same header twice: the broadcast reasons (`BroadcastReason`) have no DuplicateHeaders; the last counts.
        guard let pushType = head.pushType else { return .failure(.missingPushType) }
        guard pushType == PushType.liveactivity.rawValue else { return .failure(.invalidPushType) }
        guard let channelText = head.channelID else { return .failure(.missingChannelId) }
        guard let channelID = ChannelID(channelText) else { return .failure(.badChannelId) }
        // Apple requires both; absent, Pushgate takes what APNs takes for a unicast (priority 10) and
        // what the channel's policy allows (0 on a No-Message-Stored channel, stored otherwise).
        var priority = Priority.immediate
        if let text = head.priority {
            guard let value = Priority(header: text) else { return .failure(.badPriority) }
            priority = value
        }
        var expiration: Expiration?
        if let text = head.expiration {
            guard let value = Expiration(header: text) else { return .failure(.badExpirationDate) }
            expiration = value
        }
        if let teamID, !context.teamLimiter.allowsRequest(for: teamID, now: now) { return .failure(.tooManyRequests) }
        guard let channel = channels.channel(channelID, bundleID: bundleID) else {
            return .failure(.channelNotRegistered)
        }
        if channel.storagePolicy == .noMessageStored {
            // "For No Message Stored channels, you can only specify a 0 expiration value" ([BC]).
            guard expiration == nil || expiration == .immediateOnly else { return .failure(.badExpirationDate) }
            expiration = .immediateOnly
        }
        guard !body.isEmpty else { return .failure(.payloadEmpty) }
        guard body.count <= Self.maximumPayload else { return .failure(.payloadTooLarge) }
        // A JSON object, read by the provider API's own scanner (as a unicast's payload is).
        guard case .success = PayloadScanner.scan(body) else { return .failure(.badRequestPayload) }
        return .success(
            BroadcastSubmission(
                id: id, channel: channel, priority: priority, expiration: expiration ?? .storeByDefault,
                payload: body, teamID: teamID))
    }
}
