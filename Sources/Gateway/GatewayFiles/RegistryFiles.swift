import Crypto
import Foundation
import ProviderAuth
import PushModel
import Yams

/// A problem in one of the registry files, naming the file and the entry.
public struct RegistryFileError: Error, CustomStringConvertible {
    public var path: String
    public var message: String
    public var description: String { "\(path): \(message)" }
}

/// The YAML files the gateway reads its registered keys, client certificates and device tokens from.
/// The `pushgate keys|certs|tokens` commands edit them (under a lock, replaced atomically); the
/// gateway reloads them when they change.
public enum RegistryFiles {
    // MARK: Provider keys

    public struct KeyEntry: Codable, Equatable, Sendable {
        public var team_id: String
        public var key_id: String
        public var public_key: String
        public var topics: [String]?
        public var environment: String?
        public var revoked: Bool?

        public init(
            team_id: String, key_id: String, public_key: String, topics: [String]?, environment: String?,
            revoked: Bool? = nil
        ) {
            self.team_id = team_id
            self.key_id = key_id
            self.public_key = public_key
            self.topics = topics
            self.environment = environment
            self.revoked = revoked
        }
    }

    struct KeysDocument: Codable { var keys: [KeyEntry]? }

    public static func loadKeys(_ path: String) throws -> KeyRegistry {
        try keys(yaml: text(at: path), path: path)
    }

    /// The keys a registry file's text lists (`path` names it in errors).
    public static func keys(yaml: String?, path: String) throws -> KeyRegistry {
        let entries = try decode(KeysDocument.self, yaml: yaml, path: path)?.keys ?? []
        return KeyRegistry(try entries.enumerated().map { index, entry in try key(entry, index: index, path: path) })
    }

    static func key(_ entry: KeyEntry, index: Int, path: String) throws -> ProviderKey {
        let at = "keys[\(index)]"
        guard entry.team_id.count == 10 else {
            throw RegistryFileError(path: path, message: "\(at).team_id: must be 10 characters, got '\(entry.team_id)'")
        }
        guard entry.key_id.count == 10 else {
            throw RegistryFileError(path: path, message: "\(at).key_id: must be 10 characters, got '\(entry.key_id)'")
        }
        let publicKey: P256.Signing.PublicKey
        do {
            publicKey = try P256.Signing.PublicKey(pemRepresentation: entry.public_key)
        } catch {
            throw RegistryFileError(path: path, message: "\(at).public_key: not a P-256 public key in PEM form")
        }
        return ProviderKey(
            teamID: entry.team_id, keyID: entry.key_id, publicKey: publicKey, topics: Set(entry.topics ?? []),
            environment: try environment(entry.environment, at: "\(at).environment", path: path),
            revoked: entry.revoked ?? false)
    }

    public static func addKey(_ entry: KeyEntry, to path: String) throws {
        _ = try key(entry, index: 0, path: path)
        try update(KeysDocument.self, at: path, empty: KeysDocument(keys: [])) { document in
            var keys = document.keys ?? []
            keys.removeAll { $0.key_id == entry.key_id }
            keys.append(entry)
            document.keys = keys
        }
    }

    // MARK: Client certificates

    public struct CertificateEntry: Codable, Equatable, Sendable {
        public var sha256: String
        public var team_id: String?
        public var topics: [String]
        public var environment: String?

        public init(sha256: String, team_id: String?, topics: [String], environment: String?) {
            self.sha256 = sha256
            self.team_id = team_id
            self.topics = topics
            self.environment = environment
        }
    }

    struct CertificatesDocument: Codable { var certificates: [CertificateEntry]? }

    public static func loadCertificates(_ path: String) throws -> CertificateGrants {
        try certificates(yaml: text(at: path), path: path)
    }

    public static func certificates(yaml: String?, path: String) throws -> CertificateGrants {
        let entries = try decode(CertificatesDocument.self, yaml: yaml, path: path)?.certificates ?? []
        var grants: [String: CertificateGrant] = [:]
        for (index, entry) in entries.enumerated() {
            let fingerprint = entry.sha256.lowercased().replacingOccurrences(of: ":", with: "")
            guard fingerprint.count == 64, fingerprint.allSatisfy(\.isHexDigit) else {
                throw RegistryFileError(
                    path: path, message: "certificates[\(index)].sha256: expected 64 hex characters")
            }
            grants[fingerprint] = CertificateGrant(
                teamID: entry.team_id, topics: entry.topics,
                environment: try environment(entry.environment, at: "certificates[\(index)].environment", path: path))
        }
        return CertificateGrants(grants)
    }

    public static func addCertificate(_ entry: CertificateEntry, to path: String) throws {
        try update(CertificatesDocument.self, at: path, empty: CertificatesDocument(certificates: [])) { document in
            var certificates = document.certificates ?? []
            certificates.removeAll { $0.sha256 == entry.sha256 }
            certificates.append(entry)
            document.certificates = certificates
        }
    }

    // MARK: Device tokens

    public struct TokenEntry: Codable, Equatable, Sendable {
        public var token: String
        public var bundle_id: String
        /// Set when the app was uninstalled: milliseconds since the epoch (the 410 timestamp).
        public var unregistered_at: Int64?
    }

    struct TokensDocument: Codable { var tokens: [TokenEntry]? }

    public static func loadTokens(_ path: String, lengths: ClosedRange<Int>) throws -> [DeviceToken: TokenStatus] {
        try tokens(yaml: text(at: path), path: path, lengths: lengths)
    }

    public static func tokens(yaml: String?, path: String, lengths: ClosedRange<Int>) throws -> [DeviceToken:
        TokenStatus]
    {
        let entries = try decode(TokensDocument.self, yaml: yaml, path: path)?.tokens ?? []
        var result: [DeviceToken: TokenStatus] = [:]
        for (index, entry) in entries.enumerated() {
            guard let token = DeviceToken(entry.token, lengths: lengths) else {
                throw RegistryFileError(
                    path: path, message: "tokens[\(index)].token: not a hex device token of \(lengths) characters")
            }
            if let since = entry.unregistered_at {
                result[token] = .unregistered(bundleID: entry.bundle_id, since: UnixTime(milliseconds: since))
            } else {
                result[token] = .active(bundleID: entry.bundle_id)
            }
        }
        return result
    }

    public static func registerToken(_ token: DeviceToken, bundleID: String, in path: String) throws {
        try registerTokens([token], bundleID: bundleID, in: path)
    }

    /// Registers several tokens in one read and one write of the file (one at a time rewrote it per
    /// token: 1,000 took a minute).
    public static func registerTokens(_ added: [DeviceToken], bundleID: String, in path: String) throws {
        let hexes = Set(added.map(\.hex))
        try update(TokensDocument.self, at: path, empty: TokensDocument(tokens: [])) { document in
            var tokens = document.tokens ?? []
            tokens.removeAll { hexes.contains($0.token) }
            tokens.append(
                contentsOf: added.map { TokenEntry(token: $0.hex, bundle_id: bundleID, unregistered_at: nil) })
            document.tokens = tokens
        }
    }

    /// Marks a token's app as uninstalled at `time`; false when the token is not registered.
    public static func unregisterToken(_ token: DeviceToken, at time: UnixTime, in path: String) throws -> Bool {
        var found = false
        try update(TokensDocument.self, at: path, empty: TokensDocument(tokens: [])) { document in
            var tokens = document.tokens ?? []
            for index in tokens.indices where tokens[index].token == token.hex {
                tokens[index].unregistered_at = time.milliseconds
                found = true
            }
            document.tokens = tokens
        }
        return found
    }

    // MARK: Reading and writing

    static func environment(_ text: String?, at: String, path: String) throws -> PushEnvironment? {
        guard let text, !text.isEmpty else { return nil }
        guard let value = PushEnvironment(rawValue: text) else {
            throw RegistryFileError(path: path, message: "\(at): expected development or production, got '\(text)'")
        }
        return value
    }

    /// The file's text, or nil when there is no file (an empty registry).
    static func text(at path: String) throws -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw RegistryFileError(path: path, message: "cannot read: \(error.localizedDescription)")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, yaml: String?, path: String) throws -> T? {
        guard let yaml, !yaml.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return nil }
        do {
            return try YAMLDecoder().decode(T.self, from: yaml)
        } catch {
            throw RegistryFileError(path: path, message: "not a valid registry file: \(error)")
        }
    }

    static func read<T: Decodable>(_ type: T.Type, from path: String) throws -> T? {
        try decode(type, yaml: text(at: path), path: path)
    }

    /// Read-modify-write under an exclusive lock, replacing the file atomically.
    static func update<T: Codable>(_ type: T.Type, at path: String, empty: T, _ change: (inout T) throws -> Void) throws
    {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        let lock = open(path + ".lock", O_CREAT | O_RDWR, 0o600)
        guard lock >= 0 else { throw RegistryFileError(path: path, message: "cannot open lock file") }
        defer { close(lock) }
        flock(lock, LOCK_EX)
        defer { flock(lock, LOCK_UN) }
        var document = try read(T.self, from: path) ?? empty
        try change(&document)
        let text = try YAMLEncoder().encode(document)
        let temporary = path + ".tmp"
        try text.write(toFile: temporary, atomically: false, encoding: .utf8)
        guard rename(temporary, path) == 0 else {
            throw RegistryFileError(path: path, message: "cannot replace the file")
        }
    }
}
