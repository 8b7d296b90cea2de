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
