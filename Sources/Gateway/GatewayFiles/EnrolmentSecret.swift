import Foundation
import PushModel

/// The fleet's enrolment secret: what a device's `register` must carry. Set by `devices.enrolment_secret`;
/// when that is empty, the gateway makes one on its first start and keeps it in data_dir/enrolment-secret
/// (mode 0600), where `pushgate simulate` on the same machine finds it.
public enum EnrolmentSecret {
    public static let fileName = "enrolment-secret"

    public static func path(dataDirectory: String) -> String {
        (dataDirectory as NSString).appendingPathComponent(fileName)
    }

    /// The secret in the file, if there is one.
    public static func read(dataDirectory: String) -> String? {
        guard let text = try? String(contentsOfFile: path(dataDirectory: dataDirectory), encoding: .utf8) else {
            return nil
        }
        let secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return secret.isEmpty ? nil : secret
    }

    /// The secret in the file, made (32 random bytes, hex) the first time.
    public static func ensure(dataDirectory: String) throws -> String {
        if let secret = read(dataDirectory: dataDirectory) { return secret }
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        var generator = SystemRandomNumberGenerator()
        let secret = Hex.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let file = path(dataDirectory: dataDirectory)
        guard
            FileManager.default.createFile(
                atPath: file, contents: Data((secret + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else {
            throw RegistryFileError(
                path: file, message: "cannot write the enrolment secret (or set devices.enrolment_secret)")
        }
        return secret
    }
}
