import Crypto

public enum CertificateFingerprint {
    /// Lower-case hex SHA-256 of a certificate's DER bytes: how grants name a client certificate.
    public static func sha256Hex(_ der: [UInt8]) -> String {
        SHA256.hash(data: der).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
