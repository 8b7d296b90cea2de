import ProviderAuth
import PushIntake
import PushModel

/// The accept/reject decision for one provider connection, apart from HTTP/2: the head is decided when
/// its HEADERS arrive, the body at the end of the stream. No I/O; time is an argument.
public struct PushRequestDecider {
    /// A head that passed every rule that does not need the body.
    public struct AcceptedHead {
        public var parsed: ParsedHead
        public var topic: Topic
        public var bundleID: String
        public var teamID: String?
    }

    private var authentication: ConnectionAuthentication
    let identity: ConnectionIdentity
    private let context: ProviderContext
    /// The connection's source address: failed token verifications are bounded per address too.
    private let address: String

    public init(context: ProviderContext, identity: ConnectionIdentity, address: String = "?") {
        self.context = context
        self.identity = identity
        self.address = address
        self.authentication = ConnectionAuthentication(policy: context.authPolicy)
    }

    /// The connection presented too many bad provider tokens: it is to be closed.
    public var authenticationExhausted: Bool { authentication.exhausted }

    public mutating func decideHead(_ head: RequestHead, now: UnixTime) -> Result<AcceptedHead, Rejection> {
        let parsed: ParsedHead
        switch head.parse(tokenLengths: context.settings.deviceTokenLengths) {
        case .success(let value): parsed = value
        case .failure(let rejection): return .failure(rejection)
        }
        let environment = context.settings.environment

        // Authentication, then the topic and what the credential may do with it.
        let topic: Topic
        let teamID: String?
        let bundleID: String
        switch identity {
        case .unknownCertificate:
            return .failure(Rejection(.badCertificate))
        case .certificate(let grant):
            if let limited = grant.environment, limited != environment {
                return .failure(Rejection(.badCertificateEnvironment))
            }
            // With a certificate the topic may be omitted when the certificate has exactly one.
            guard let chosen = parsed.topic ?? (grant.topics.count == 1 ? Topic(grant.topics[0]) : nil) else {
                return .failure(Rejection(.missingTopic))
            }
            guard let bundle = parsed.bundleID(topic: chosen) else { return .failure(Rejection(.badTopic)) }
            guard grant.topics.contains(bundle) else { return .failure(Rejection(.topicDisallowed)) }
            let effectiveType = parsed.pushType ?? PushType.infer(topic: chosen, payload: PayloadSummary())
            if effectiveType.requiresTokenAuthentication { return .failure(Rejection(.invalidPushType)) }
            topic = chosen
            bundleID = bundle
            teamID = grant.teamID
        case .token:
            let token: VerifiedToken
            let failuresBefore = authentication.failedVerifications
            let limiter = context.verificationLimiter
            let address = self.address
            switch authentication.authenticate(
                authorization: parsed.authorization, keys: context.keys, now: now,
                verificationAllowed: !limiter.isExhausted(for: address, now: now))
            {
            case .success(let value): token = value
            case .failure(let rejection):
                if authentication.failedVerifications > failuresBefore {
                    _ = limiter.allowsRequest(for: address, now: now)
                }
                return .failure(rejection)
            }
            let key = token.key
            if let limited = key.environment, limited != environment {
                return .failure(Rejection(.badEnvironmentKeyIdInToken))
            }
            guard let chosen = parsed.topic else { return .failure(Rejection(.missingTopic)) }
            guard let bundle = parsed.bundleID(topic: chosen) else { return .failure(Rejection(.badTopic)) }
            guard key.allows(bundleID: bundle) else { return .failure(Rejection(.topicDisallowed)) }
            topic = chosen
            bundleID = bundle
            teamID = token.teamID
        }

        // The device directory: unknown tokens, uninstalled apps, tokens of another app.
        guard let status = context.directory.status(of: parsed.deviceToken) else {
            return .failure(Rejection(.badDeviceToken))
        }
        if let rejection = status.rejection(forBundleID: bundleID) { return .failure(rejection) }

        // Request rates, each its own limiter (not the silent-push budget).
        if let teamID, !context.teamLimiter.allowsRequest(for: teamID, now: now) {
            return .failure(Rejection(.tooManyRequests))
        }
        if !context.tokenLimiter.allowsRequest(for: parsed.deviceToken, now: now) {
            return .failure(Rejection(.tooManyRequests))
        }
        return .success(AcceptedHead(parsed: parsed, topic: topic, bundleID: bundleID, teamID: teamID))
    }

    public func decideBody(_ head: AcceptedHead, body: [UInt8], id: APNsID, now: UnixTime) -> Result<
        PushNotification, Rejection
    > {
        head.parsed.notification(
            topic: head.topic, bundleID: head.bundleID, body: body, teamID: head.teamID, now: now, id: id)
    }

    /// A broadcast, decided with this connection's credential state (`BroadcastRequest`).
    mutating func decideBroadcast(
        _ request: BroadcastRequest, id: APNsID, channels: any ChannelDirectory, now: UnixTime
    ) -> Result<BroadcastSubmission, BroadcastReason> {
        request.decide(
            id: id, identity: identity, authentication: &authentication, context: context, channels: channels, now: now)
    }
}
