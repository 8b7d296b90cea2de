import NIOCore
import NIOSSL
import ProviderAuth

extension ProviderContext {
    /// A connection's credential as the provider APIs read it (called on its event loop): no client
    /// certificate, a registered one (its grant), or one the gateway does not know.
    func identity(of connection: any Channel) -> ConnectionIdentity {
        guard let tls = try? connection.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self),
            let certificate = tls.peerCertificate
        else { return .token }
        guard let der = try? certificate.toDERBytes() else { return .unknownCertificate }
        let fingerprint = CertificateFingerprint.sha256Hex(der)
        if let grant = certificateGrants.byFingerprint[fingerprint] { return .certificate(grant) }
        return .unknownCertificate
    }
}
