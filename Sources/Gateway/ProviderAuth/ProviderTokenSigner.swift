import Crypto
import Foundation
import PushModel

/// Signs provider tokens as a backend does: used by `pushgate send`, the load generator and the tests.
public struct ProviderTokenSigner: Sendable {
    public var teamID: String
    public var keyID: String
    public var privateKey: P256.Signing.PrivateKey

    public init(teamID: String, keyID: String, privateKey: P256.Signing.PrivateKey) {
        self.teamID = teamID
        self.keyID = keyID
        self.privateKey = privateKey
    }

    /// Reads a .p8 (PKCS#8 PEM) private key as Apple issues it.
    public init(teamID: String, keyID: String, p8PEM: String) throws {
        self.init(teamID: teamID, keyID: keyID, privateKey: try P256.Signing.PrivateKey(pemRepresentation: p8PEM))
    }

    /// A token issued at `issuedAt`. `algorithm` and `iatAsString` exist so tests can send what odd clients send.
    public func token(issuedAt: UnixTime, algorithm: String = "ES256", iatAsString: Bool = false) throws -> String {
        let header = #"{"alg":"\#(algorithm)","kid":"\#(keyID)"}"#
        let iat = iatAsString ? "\"\(issuedAt.seconds)\"" : "\(issuedAt.seconds)"
        let claims = #"{"iss":"\#(teamID)","iat":\#(iat)}"#
        let signingInput = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
        let signature = try privateKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }
}
