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
/// - Forged tokens cost an ECDSA verification each: the last few rejected `authorization` values are
///   answered again without verifying, and after `maxFailedVerifications` failures the connection is
///   `exhausted` (the handler closes it with GOAWAY, as APNs closes connections that keep presenting bad
///   tokens). A verification the caller does not allow (its source address failed too often) is refused
///   without being attempted.
public struct ConnectionAuthentication: Sendable {
    public struct Policy: Sendable {
        public var verifier: ProviderTokenVerifier
        /// Token changes a connection may make in a burst (the first token is free).
        public var updateBurst: Int
        /// One more change is allowed per this interval.
        public var updateIntervalMilliseconds: Int64
        /// Failed verifications after which the connection is closed.
        public var maxFailedVerifications: Int

        public init(
            verifier: ProviderTokenVerifier = .init(), updateBurst: Int = 2,
            updateIntervalMilliseconds: Int64 = 20 * 60 * 1000, maxFailedVerifications: Int = 16
        ) {
            self.verifier = verifier
            self.updateBurst = updateBurst
            self.updateIntervalMilliseconds = updateIntervalMilliseconds
            self.maxFailedVerifications = maxFailedVerifications
        }
    }

    /// Rejected `authorization` values remembered per connection.
    static let rememberedRejections = 8

    private struct Accepted: Sendable {
        /// The `authorization` header as received: HPACK hands repeated headers out of its table, so the
        /// next request's value usually shares this storage and compares in constant time.
        var header: String
        var token: VerifiedToken
    }

    public private(set) var teamID: String?
    private var current: Accepted?
    private var previous: Accepted?
    /// Provider-token updates on this connection (`Policy.updateBurst`, then one per interval).
    private var updates = TokenBucket(now: UnixTime(milliseconds: 0))
    private let policy: Policy
    /// The last few rejected `authorization` values and their answers, newest last.
    private var rejected: [(header: String, rejection: Rejection)] = []
    /// Verifications that failed on this connection (signature, key, form, time, team).
    public private(set) var failedVerifications = 0

    /// The connection presented too many bad tokens: close it.
    public var exhausted: Bool { failedVerifications >= policy.maxFailedVerifications }

    public init(policy: Policy) {
        self.policy = policy
    }

    /// `verificationAllowed` is asked before a signature is verified (the caller's limit on failed
    /// verifications per source address); a refusal answers InvalidProviderToken without verifying.
    public mutating func authenticate(
        authorization: String?, keys: @autoclosure () -> KeyRegistry, now: UnixTime,
        verificationAllowed: @autoclosure () -> Bool = true
    ) -> Result<VerifiedToken, Rejection> {
        // Hot path: the same header as the last request.
        if let authorization {
            if let current, current.header == authorization { return checked(current.token, now: now) }
            if let previous, previous.header == authorization { return checked(previous.token, now: now) }
            if let known = rejected.last(where: { $0.header == authorization }) { return .failure(known.rejection) }
        }
        let jwt: Substring
        switch ProviderTokenVerifier.jwt(fromAuthorization: authorization) {
        case .success(let value): jwt = value
        case .failure(let rejection): return .failure(rejection)
        }
        let header = authorization!
        guard verificationAllowed() else { return fail(header, Rejection(.invalidProviderToken)) }

        let token: VerifiedToken
        switch policy.verifier.verify(jwt, keys: keys()) {
        case .success(let value): token = value
        case .failure(let rejection): return fail(header, rejection)
        }
        if let teamID, teamID != token.teamID { return fail(header, Rejection(.unrelatedKeyIdInToken)) }
        if let rejection = policy.verifier.checkTime(token, now: now) { return fail(header, rejection) }
        // ECDSA signatures differ each time a token is signed: the same claims signed again are the same
        // token, not an update.
        if let current, current.token.keyID == token.keyID, current.token.issuedAt == token.issuedAt {
            self.current = Accepted(header: header, token: token)
            return .success(token)
        }
        if current != nil {
            let rate = TokenBucket.Rate(
                capacity: policy.updateBurst, refillIntervalMilliseconds: Double(policy.updateIntervalMilliseconds))
            guard updates.take(rate, now: now) else { return .failure(Rejection(.tooManyProviderTokenUpdates)) }
        }
        teamID = token.teamID
        previous = current
        current = Accepted(header: header, token: token)
        return .success(token)
    }

    /// A verification that failed: counted, and its header remembered so it is not verified again.
    private mutating func fail(_ header: String, _ rejection: Rejection) -> Result<VerifiedToken, Rejection> {
        failedVerifications += 1
        rejected.append((header, rejection))
        if rejected.count > Self.rememberedRejections { rejected.removeFirst() }
        return .failure(rejection)
    }

    private func checked(_ token: VerifiedToken, now: UnixTime) -> Result<VerifiedToken, Rejection> {
        if let rejection = policy.verifier.checkTime(token, now: now) { return .failure(rejection) }
        return .success(token)
    }
}
