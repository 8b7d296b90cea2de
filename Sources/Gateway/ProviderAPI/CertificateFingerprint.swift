import Crypto
import PushModel

public enum CertificateFingerprint {
    /// Lower-case hex SHA-256 of a certificate's DER bytes: how grants name a client certificate.
    public static func sha256Hex(_ der: [UInt8]) -> String {
        Hex.encode(SHA256.hash(data: der))
    }
}
