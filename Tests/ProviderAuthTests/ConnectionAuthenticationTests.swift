import Crypto
import PushModel
import Testing

@testable import ProviderAuth

/// The per-connection token state machine with plain instants: no sockets, no clock.
@Suite struct ConnectionAuthenticationTests {
    let signer = ProviderTokenSigner(teamID: "TEAM123456", keyID: "KEY1234567", privateKey: P256.Signing.PrivateKey())
    var keys: KeyRegistry {
        KeyRegistry([ProviderKey(teamID: "TEAM123456", keyID: "KEY1234567", publicKey: signer.privateKey.publicKey)])
    }
    let start = UnixTime(seconds: 1_800_000_000)

    func bearer(_ at: UnixTime) -> String { "bearer " + (try! signer.token(issuedAt: at)) }

    /// Runs one request through the state machine and returns Apple's reason, or nil when accepted.
    func reason(
        _ auth: inout ConnectionAuthentication, _ authorization: String?, keys: KeyRegistry? = nil, at now: UnixTime
    ) -> RejectionReason? {
        auth.authenticate(authorization: authorization, keys: keys ?? self.keys, now: now).failureReason
    }

    @Test func cachedTokenIsNotVerifiedAgainButStillExpires() {
        var auth = ConnectionAuthentication(policy: .init())
        let token = bearer(start)
        #expect(reason(&auth, token, at: start) == nil)
        // An empty registry would refuse a token it has to verify: the cached one passes without it.
        #expect(reason(&auth, token, keys: KeyRegistry(), at: start.adding(seconds: 3600)) == nil)
        #expect(reason(&auth, token, at: start.adding(seconds: 3601)) == .expiredProviderToken)
    }

    @Test func updatesAreBudgeted() {
        var auth = ConnectionAuthentication(policy: .init(updateBurst: 1, updateIntervalMilliseconds: 60_000))
        #expect(reason(&auth, bearer(start), at: start) == nil)
        #expect(reason(&auth, bearer(start.adding(seconds: 1)), at: start.adding(seconds: 1)) == nil)
        #expect(
            reason(&auth, bearer(start.adding(seconds: 2)), at: start.adding(seconds: 2))
                == .tooManyProviderTokenUpdates)
        #expect(reason(&auth, bearer(start.adding(seconds: 61)), at: start.adding(seconds: 61)) == nil)
    }

    @Test func sameClaimsSignedAgainIsNotAnUpdate() {
        var auth = ConnectionAuthentication(policy: .init(updateBurst: 0))
        for _ in 0..<5 {
            #expect(reason(&auth, bearer(start), at: start) == nil)
        }
    }

    /// A token with the registered key id but another key's signature.
    func forged(_ at: UnixTime) -> String {
        let other = ProviderTokenSigner(
            teamID: "TEAM123456", keyID: "KEY1234567", privateKey: P256.Signing.PrivateKey())
        return "bearer " + (try! other.token(issuedAt: at))
    }

    @Test func badTokensAreRememberedAndTooManyExhaustTheConnection() {
        var auth = ConnectionAuthentication(policy: .init(maxFailedVerifications: 3))
        let bad = forged(start)
        #expect(reason(&auth, bad, at: start) == .invalidProviderToken)
        // The same bad token again is answered from memory: not verified, not counted.
        for _ in 0..<10 { #expect(reason(&auth, bad, keys: KeyRegistry(), at: start) == .invalidProviderToken) }
        #expect(auth.failedVerifications == 1)
        #expect(!auth.exhausted)
        #expect(reason(&auth, forged(start.adding(seconds: 1)), at: start) == .invalidProviderToken)
        #expect(reason(&auth, forged(start.adding(seconds: 2)), at: start) == .invalidProviderToken)
        #expect(auth.exhausted, "three bad tokens: the connection is to be closed")
        // A good token still authenticates (the handler closes the connection after answering).
        #expect(reason(&auth, bearer(start), at: start) == nil)
    }

    @Test func aVerificationTheCallerRefusesIsNotAttempted() {
        var auth = ConnectionAuthentication(policy: .init())
        // An empty registry would answer InvalidProviderToken too; the point is that the refusal comes first.
        let rejection = auth.authenticate(
            authorization: bearer(start), keys: keys, now: start, verificationAllowed: false)
        #expect(rejection.failureReason == .invalidProviderToken)
        #expect(auth.failedVerifications == 1)
        // Once the address may verify again, the good token passes.
        #expect(reason(&auth, bearer(start.adding(seconds: 1)), at: start.adding(seconds: 1)) == nil)
    }

    @Test func malformedAuthorization() {
        var auth = ConnectionAuthentication(policy: .init())
        #expect(reason(&auth, nil, at: start) == .missingProviderToken)
        #expect(reason(&auth, "bearer", at: start) == .missingProviderToken)
        #expect(reason(&auth, "Bearer a.b", at: start) == .invalidProviderToken)
        #expect(reason(&auth, "bearer a.b.c", at: start) == .invalidProviderToken)
        #expect(reason(&auth, "BEARER " + (try! signer.token(issuedAt: start)), at: start) == nil)
    }
}

extension Result where Failure == Rejection {
    var failureReason: RejectionReason? {
        if case .failure(let rejection) = self { return rejection.reason }
        return nil
    }
}
