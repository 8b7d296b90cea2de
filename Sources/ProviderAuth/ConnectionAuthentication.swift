import PushModel

/// Token authentication on one provider connection, as a state machine: the request's `authorization`
/// and the time go in, the verified token or Apple's reason comes out.
///
/// - One team per connection: once a token of one team was accepted, a token of another team is
///   refused with UnrelatedKeyIdInToken.
/// - The last accepted token is cached, so the hot path compares strings and checks expiry but does
///   not verify a signature again. The token before it stays accepted too (requests already in flight
///   when the client refreshed), without counting as an update; so does the same claims signed again.
/// - Changing tokens is limited by a token bucket (`updates`): APNs asks for no more than one refresh
///   per 20 minutes and answers TooManyProviderTokenUpdates when a connection churns.
public struct ConnectionAuthentication: Sendable {
    public struct Policy: Sendable {
        public var verifier: ProviderTokenVerifier
        /// Token changes a connection may make in a burst (the first token is free).
        public var updateBurst: Int
        /// One more change is allowed per this interval.
        public var updateIntervalMilliseconds: Int64

        public init(
            verifier: ProviderTokenVerifier = .init(), updateBurst: Int = 2,
            updateIntervalMilliseconds: Int64 = 20 * 60 * 1000
        ) {
            self.verifier = verifier
            self.updateBurst = updateBurst
            self.updateIntervalMilliseconds = updateIntervalMilliseconds
        }
    }

    private struct Accepted: Sendable {
        /// The `authorization` header as received: HPACK hands repeated headers out of its table, so the
        /// next request's value usually shares this storage and compares in constant time.
        var header: String
        var token: VerifiedToken
    }

    public private(set) var teamID: String?
    private var current: Accepted?
    private var previous: Accepted?
    private var updates: TokenBucket?
    private let policy: Policy

    public init(policy: Policy) {
        self.policy = policy
    }

    public mutating func authenticate(
        authorization: String?, keys: @autoclosure () -> KeyRegistry, now: UnixTime
    ) -> Result<VerifiedToken, Rejection> {
        // Hot path: the same header as the last request.
        if let authorization {
            if let current, current.header == authorization { return checked(current.token, now: now) }
            if let previous, previous.header == authorization { return checked(previous.token, now: now) }
        }
        let jwt: Substring
        switch ProviderTokenVerifier.jwt(fromAuthorization: authorization) {
        case .success(let value): jwt = value
        case .failure(let rejection): return .failure(rejection)
        }
        let header = authorization!

        let token: VerifiedToken
        switch policy.verifier.verify(jwt, keys: keys()) {
        case .success(let value): token = value
        case .failure(let rejection): return .failure(rejection)
        }
        if let teamID, teamID != token.teamID { return .failure(Rejection(.unrelatedKeyIdInToken)) }
        if let rejection = policy.verifier.checkTime(token, now: now) { return .failure(rejection) }
        // ECDSA signatures differ each time a token is signed: the same claims signed again are the same
        // token, not an update.
        if let current, current.token.keyID == token.keyID, current.token.issuedAt == token.issuedAt {
            self.current = Accepted(header: header, token: token)
            return .success(token)
        }
        if current != nil {
            if updates == nil {
                updates = TokenBucket(
                    capacity: policy.updateBurst, refillIntervalMilliseconds: policy.updateIntervalMilliseconds,
                    now: now)
            }
            guard updates!.take(now: now) else { return .failure(Rejection(.tooManyProviderTokenUpdates)) }
        }
        teamID = token.teamID
        previous = current
        current = Accepted(header: header, token: token)
        return .success(token)
    }

    private func checked(_ token: VerifiedToken, now: UnixTime) -> Result<VerifiedToken, Rejection> {
        if let rejection = policy.verifier.checkTime(token, now: now) { return .failure(rejection) }
        return .success(token)
    }
}
