import Crypto
import PushModel

/// How one node of a fleet proves itself to another on the node links: a token made with the fleet's own
/// secret (which the nodes share through their database, so nothing is configured for it), naming the
/// node and when it was made, `<node>.<unix seconds>.<HMAC-SHA256 of both, hex>`. It travels as
/// `authorization: bearer <token>`; a node makes a new one well inside `lifetimeSeconds`.
public struct NodeTokens: Sendable {
    /// How long a token is good for, either side of when it was made (clocks of two machines differ).
    public static let lifetimeSeconds: Int64 = 3600

    private let key: SymmetricKey

    public init(secret: String) {
        key = SymmetricKey(data: Array(secret.utf8))
    }

    /// A token for `node`, made at `now`.
    public func token(node: String, now: UnixTime) -> String {
        let claim = "\(node).\(now.milliseconds / 1000)"
        return claim + "." + Hex.encode(Array(HMAC<SHA256>.authenticationCode(for: Array(claim.utf8), using: key)))
    }

    /// The node a `bearer` authorization names, when its token is this fleet's and current at `now`.
    public func node(authorization: String?, now: UnixTime) -> String? {
        guard let authorization, authorization.hasPrefix("bearer ") else { return nil }
        let token = authorization.dropFirst("bearer ".count)
        guard let lastDot = token.lastIndex(of: ".") else { return nil }
        let claim = token[..<lastDot]
        let mac = token[token.index(after: lastDot)...]
        guard let secondDot = claim.lastIndex(of: "."), let made = Int64(claim[claim.index(after: secondDot)...]),
            abs(now.milliseconds / 1000 - made) <= Self.lifetimeSeconds
        else { return nil }
        let expected = Hex.encode(
            Array(HMAC<SHA256>.authenticationCode(for: Array(claim.utf8), using: key)))
        guard ConstantTime.equal(Array(mac.utf8), Array(expected.utf8)) else { return nil }
        return String(claim[..<secondDot])
    }
}
