import Crypto
import Foundation
import PushModel

/// A provider token whose signature was checked: who signed it and when.
public struct VerifiedToken: Sendable, Equatable {
    public var teamID: String { key.teamID }
    public var keyID: String { key.keyID }
    public var issuedAt: UnixTime
    /// The registered key the signature was checked against (its topics and environment).
    public var key: ProviderKey

    public static func == (lhs: VerifiedToken, rhs: VerifiedToken) -> Bool {
        lhs.keyID == rhs.keyID && lhs.teamID == rhs.teamID && lhs.issuedAt == rhs.issuedAt
    }
}

/// Parses and verifies ES256 provider tokens (JWT) the way APNs does.
public struct ProviderTokenVerifier: Sendable {
    /// A token is valid for one hour from `iat`.
    public var lifetimeSeconds: Int64 = 3600
    /// How far in the future `iat` may be (clock skew) before the token is invalid.
    public var allowedFutureSkewSeconds: Int64 = 60

    public init(lifetimeSeconds: Int64 = 3600, allowedFutureSkewSeconds: Int64 = 60) {
        self.lifetimeSeconds = lifetimeSeconds
        self.allowedFutureSkewSeconds = allowedFutureSkewSeconds
    }

    /// The JWT from an `authorization` header value (`bearer <jwt>`), or MissingProviderToken.
    public static func jwt(fromAuthorization header: String?) -> Result<Substring, Rejection> {
        guard let header else { return .failure(Rejection(.missingProviderToken)) }
        let trimmed = header.drop(while: { $0 == " " })
        guard trimmed.count > 6, trimmed.prefix(6).lowercased() == "bearer" else {
            return .failure(Rejection(.missingProviderToken))
        }
        let token = trimmed.dropFirst(6).drop(while: { $0 == " " })
        guard !token.isEmpty else { return .failure(Rejection(.missingProviderToken)) }
        return .success(token)
    }

    /// Checks the token's form, algorithm, key and signature. Time is checked separately (`checkTime`),
    /// since a cached token is re-checked for expiry on every request but never re-verified.
    public func verify(_ jwt: Substring, keys: KeyRegistry) -> Result<VerifiedToken, Rejection> {
        let invalid = Result<VerifiedToken, Rejection>.failure(Rejection(.invalidProviderToken))
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerData = Base64URL.decode(parts[0]),
            let claimsData = Base64URL.decode(parts[1]),
            let signatureData = Base64URL.decode(parts[2]),
            let header = try? JSONDecoder().decode(JOSEHeader.self, from: headerData),
            let claims = try? JSONDecoder().decode(Claims.self, from: claimsData)
        else { return invalid }

        guard header.alg == "ES256", let keyID = header.kid else { return invalid }
        guard let key = keys.key(id: keyID) else { return invalid }
        guard claims.iss == key.teamID else { return invalid }
        let issuedAt = claims.iat.seconds

        let signature: P256.Signing.ECDSASignature
        if signatureData.count == 64, let raw = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData) {
            signature = raw
        } else if let der = try? P256.Signing.ECDSASignature(derRepresentation: signatureData) {
            // Some older clients send DER instead of JWS's raw r||s; APNs accepts them too.
            signature = der
        } else {
            return invalid
        }
        let signingInput = Data(jwt.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.publicKey.isValidSignature(signature, for: signingInput) else { return invalid }
        if key.revoked { return .failure(Rejection(.forbidden)) }
        return .success(VerifiedToken(issuedAt: UnixTime(seconds: issuedAt), key: key))
    }

    /// Expired after an hour; a token issued in the future (beyond the allowed skew) is invalid.
    public func checkTime(_ token: VerifiedToken, now: UnixTime) -> Rejection? {
        if token.issuedAt.adding(seconds: lifetimeSeconds) < now { return Rejection(.expiredProviderToken) }
        if token.issuedAt > now.adding(seconds: allowedFutureSkewSeconds) { return Rejection(.invalidProviderToken) }
        return nil
    }
}

private struct JOSEHeader: Decodable {
    var alg: String
    var kid: String?
}

private struct Claims: Decodable {
    var iss: String
    var iat: IssuedAt

    /// `iat` as a JSON number or a numeric string (APNSwift sends a string).
    struct IssuedAt: Decodable {
        var seconds: Int64

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Int64.self) {
                seconds = value
            } else if let value = try? container.decode(Double.self), value.isFinite, abs(value) < 1e15 {
                seconds = Int64(value)
            } else if let text = try? container.decode(String.self), let value = Int64(text) {
                seconds = value
            } else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "iat is not a number")
            }
        }
    }
}

enum Base64URL {
    static func decode(_ text: Substring) -> Data? {
        var base64 = String(text).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        if base64.contains("=") { return nil }
        while base64.utf8.count % 4 != 0 { base64.append("=") }
        return Data(base64Encoded: base64)
    }

    static func encode<D: DataProtocol>(_ data: D) -> String {
        Data(data).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
