import Crypto
import PushModel

/// A team's signing key as registered with the gateway: the public half of the .p8 the backend holds,
/// and what the key may be used for.
public struct ProviderKey: Sendable {
    public var teamID: String
    public var keyID: String
    public var publicKey: P256.Signing.PublicKey
    /// Bundle ids this key may push to (any push type's suffix on them). Empty: every topic.
    public var topics: Set<String>
    /// The one environment the key is limited to; `nil`: both.
    public var environment: PushEnvironment?
    /// A revoked key's tokens are refused with Forbidden.
    public var revoked: Bool

    public init(
        teamID: String, keyID: String, publicKey: P256.Signing.PublicKey, topics: Set<String> = [],
        environment: PushEnvironment? = nil, revoked: Bool = false
    ) {
        self.teamID = teamID
        self.keyID = keyID
        self.publicKey = publicKey
        self.topics = topics
        self.environment = environment
        self.revoked = revoked
    }

    public func allows(bundleID: String) -> Bool { topics.isEmpty || topics.contains(bundleID) }
}

/// The registered keys by key id (Apple key ids are unique across teams).
public struct KeyRegistry: Sendable {
    public private(set) var keys: [String: ProviderKey]

    public init(_ keys: [ProviderKey] = []) {
        self.keys = Dictionary(keys.map { ($0.keyID, $0) }, uniquingKeysWith: { _, last in last })
    }

    public func key(id: String) -> ProviderKey? { keys[id] }
}
