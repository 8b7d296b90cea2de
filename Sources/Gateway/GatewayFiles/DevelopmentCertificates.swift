import Crypto
import Foundation
import SwiftASN1
import X509

/// A development certificate authority in data_dir/tls: it signs the TLS listener's certificate (for
/// localhost, 127.0.0.1 and ::1) and the provider client certificates issued by `pushgate certs issue`.
/// Created on first start when no certificate is configured, or by `pushgate certs init`.
public struct DevelopmentCertificates: Sendable {
    public let directory: String

    public init(dataDirectory: String) {
        self.directory = (dataDirectory as NSString).appendingPathComponent("tls")
    }

    public var caCertificatePath: String { path("ca.pem") }
    public var caKeyPath: String { path("ca-key.pem") }
    public var serverCertificatePath: String { path("server.pem") }
    public var serverKeyPath: String { path("server-key.pem") }

    /// Creates the CA and the server certificate unless they exist. Returns true when it created them.
    @discardableResult
    public func ensure(now: Date = Date()) throws -> Bool {
        let manager = FileManager.default
        if manager.fileExists(atPath: serverCertificatePath), manager.fileExists(atPath: serverKeyPath),
            manager.fileExists(atPath: caCertificatePath), manager.fileExists(atPath: caKeyPath)
        {
            return false
        }
        try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            OrganizationName("Pushgate")
            CommonName("Pushgate development CA")
        }
        let ca = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(caKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 365 * 86400),
            issuer: caName, subject: caName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(caKey))

        let serverKey = P256.Signing.PrivateKey()
        let server = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(serverKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(2 * 365 * 86400),
            issuer: caName,
            subject: try DistinguishedName {
                OrganizationName("Pushgate")
                CommonName("localhost")
            },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([
                    .dnsName("localhost"),
                    .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                    .ipAddress(ASN1OctetString(contentBytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])),
                ])
            },
            issuerPrivateKey: .init(caKey))

        try write(caKey.pemRepresentation, to: caKeyPath, private: true)
        try write(try ca.serializeAsPEM().pemString, to: caCertificatePath, private: false)
        try write(serverKey.pemRepresentation, to: serverKeyPath, private: true)
        try write(try server.serializeAsPEM().pemString, to: serverCertificatePath, private: false)
        return true
    }

    /// Issues a provider client certificate signed by the development CA, with the subject Apple's push
    /// certificates have (`UID=<bundle id>, CN=Apple Push Services: <bundle id>, OU=<team id>`): clients
    /// that send no topic take it from the UID. Returns the certificate PEM, its private key PEM (each
    /// ending with a newline, so that they concatenate into one file) and the SHA-256 fingerprint of its
    /// DER (how grants name it).
    public func issueClientCertificate(topic: String, teamID: String?, now: Date = Date()) throws -> (
        certificate: String, privateKey: String, sha256: String
    ) {
        try ensure(now: now)
        let caKey = try P256.Signing.PrivateKey(
            pemRepresentation: try String(contentsOfFile: caKeyPath, encoding: .utf8))
        let ca = try Certificate(pemEncoded: try String(contentsOfFile: caCertificatePath, encoding: .utf8))
        let key = P256.Signing.PrivateKey()
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(365 * 86400),
            issuer: ca.subject,
            subject: try DistinguishedName {
                UserID(topic)
                CommonName("Apple Push Services: \(topic)")
                if let teamID { OrganizationalUnitName(teamID) }
                OrganizationName("Pushgate")
            },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.clientAuth])
            },
            issuerPrivateKey: .init(caKey))
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        let fingerprint = SHA256.hash(data: serializer.serializedBytes).map { String(format: "%02x", $0) }.joined()
        return (
            Self.endingWithNewline(try certificate.serializeAsPEM().pemString),
            Self.endingWithNewline(key.pemRepresentation), fingerprint
        )
    }

    static func endingWithNewline(_ pem: String) -> String { pem.hasSuffix("\n") ? pem : pem + "\n" }

    private func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    private func write(_ text: String, to path: String, private isPrivate: Bool) throws {
        try Self.endingWithNewline(text).write(toFile: path, atomically: true, encoding: .utf8)
        if isPrivate { chmod(path, 0o600) }
    }
}

/// The user id attribute (UID, OID 0.9.2342.19200300.100.1.1, RFC 4519) in a subject: Apple's push
/// certificates carry the bundle id there.
struct UserID: RelativeDistinguishedNameConvertible, Sendable {
    static let oid: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]
    var value: String

    init(_ value: String) { self.value = value }

    func makeRDN() throws -> RelativeDistinguishedName {
        RelativeDistinguishedName(.init(type: Self.oid, utf8String: value))
    }
}
