import Crypto
import Foundation
import GatewayFiles
import ProviderAuth
import PushModel
import Testing

@testable import Gateway

@Suite struct RegistryFilesTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "pushgate-registry-\(UUID().uuidString)"
    ).path

    @Test func keysRoundTripAndBadEntriesNameTheField() throws {
        let path = directory + "/keys.yaml"
        let key = P256.Signing.PrivateKey()
        try RegistryFiles.addKey(
            .init(
                team_id: "TEAM123456", key_id: "KEY1234567", public_key: key.publicKey.pemRepresentation,
                topics: ["com.a"], environment: "production"),
            to: path)
        let registry = try RegistryFiles.loadKeys(path)
        let loaded = try #require(registry.key(id: "KEY1234567"))
        #expect(loaded.teamID == "TEAM123456")
        #expect(loaded.topics == ["com.a"])
        #expect(loaded.environment == .production)
        #expect(loaded.publicKey.rawRepresentation == key.publicKey.rawRepresentation)

        try "keys:\n  - team_id: TEAM123456\n    key_id: KEY1234567\n    public_key: nope\n".write(
            toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: RegistryFileError.self) { try RegistryFiles.loadKeys(path) }
        do {
            _ = try RegistryFiles.loadKeys(path)
        } catch let error as RegistryFileError {
            #expect(error.message.contains("keys[0].public_key"))
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    @Test func tokensRegisterAndUninstall() throws {
        let path = directory + "/tokens.yaml"
        let token = DeviceToken(String(repeating: "a1", count: 32))!
        #expect(try RegistryFiles.loadTokens(path, lengths: 64...64).isEmpty)
        try RegistryFiles.registerToken(token, bundleID: "com.a", in: path)
        #expect(try RegistryFiles.loadTokens(path, lengths: 64...64)[token] == .active(bundleID: "com.a"))
        #expect(try RegistryFiles.unregisterToken(token, at: UnixTime(milliseconds: 42), in: path))
        #expect(
            try RegistryFiles.loadTokens(path, lengths: 64...64)[token]
                == .unregistered(bundleID: "com.a", since: UnixTime(milliseconds: 42)))
        #expect(
            try !RegistryFiles.unregisterToken(
                DeviceToken(String(repeating: "b2", count: 32))!, at: UnixTime(milliseconds: 1), in: path))
        // A batch in one write: the uninstalled token registered again is active, the others are added.
        let more = ["c3", "d4"].map { DeviceToken(String(repeating: $0, count: 32))! }
        try RegistryFiles.registerTokens([token] + more, bundleID: "com.b", in: path)
        let loaded = try RegistryFiles.loadTokens(path, lengths: 64...64)
        #expect(loaded.count == 3)
        #expect(([token] + more).allSatisfy { loaded[$0] == .active(bundleID: "com.b") })
        try? FileManager.default.removeItem(atPath: directory)
    }
}
