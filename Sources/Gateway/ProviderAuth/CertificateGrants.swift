import PushModel

/// Certificate-based provider authentication (APNs' second method): a client certificate, identified by
/// the SHA-256 of its DER encoding, is bound to a team, the bundle ids it may push to, and an environment.
public struct CertificateGrant: Sendable, Equatable {
    public var teamID: String?
    public var topics: [String]
    public var environment: PushEnvironment?

    public init(teamID: String? = nil, topics: [String], environment: PushEnvironment? = nil) {
        self.teamID = teamID
        self.topics = topics
        self.environment = environment
    }
}

public struct CertificateGrants: Sendable {
    /// Lower-case hex SHA-256 of the certificate's DER → grant.
    public var byFingerprint: [String: CertificateGrant]

    public init(_ byFingerprint: [String: CertificateGrant] = [:]) {
        self.byFingerprint = byFingerprint
    }
}

/// How a connection authenticates, fixed when its first request arrives.
public enum ConnectionIdentity: Sendable, Equatable {
    /// No client certificate: every request carries a provider token.
    case token
    /// A registered client certificate.
    case certificate(CertificateGrant)
    /// A client certificate the gateway does not know: every request is BadCertificate.
    case unknownCertificate
}
