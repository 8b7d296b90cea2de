import ArgumentParser
import Crypto
import Foundation
import Gateway
import GatewayFiles
import ProviderAuth
import PushModel
import WallClock

struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Provider signing keys (ES256, as Apple issues them).",
        subcommands: [Generate.self, Token.self])

    struct Generate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a .p8 private key for a backend and register its public key with the gateway.")

        @OptionGroup var options: ConfigOptions

        @Option(help: "Team id (10 characters), the JWT's iss.")
        var teamId: String

        @Option(help: "Key id (10 characters), the JWT's kid.")
        var keyId: String

        @Option(help: "Bundle id the key may push to; repeatable. None: every topic.")
        var topic: [String] = []

        @Option(help: "Limit the key to one environment: development or production.")
        var environment: String?

        @Option(help: "Where to write the private key (default: AuthKey_<key id>.p8 in the current directory).")
        var output: String?

        func validate() throws {
            guard teamId.count == 10 else { throw ValidationError("--team-id must be 10 characters, got '\(teamId)'") }
            guard keyId.count == 10 else { throw ValidationError("--key-id must be 10 characters, got '\(keyId)'") }
            if let environment, environment != "development", environment != "production" {
                throw ValidationError("--environment must be development or production, got '\(environment)'")
            }
        }

        func run() async throws {
            let configuration = try failing { try options.load() }
            let key = P256.Signing.PrivateKey()
            let path = output ?? "AuthKey_\(keyId).p8"
            guard !FileManager.default.fileExists(atPath: path) else {
                throw ValidationError("\(path) exists already; choose another --output")
            }
            try key.pemRepresentation.write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o600)
            try failing {
                try RegistryFiles.addKey(
                    .init(
                        team_id: teamId, key_id: keyId, public_key: key.publicKey.pemRepresentation,
                        topics: topic.isEmpty ? nil : topic, environment: environment),
                    to: configuration.keysFile)
            }
            print("wrote \(path); registered key \(keyId) of team \(teamId) in \(configuration.keysFile)")
        }
    }

    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Print a provider token (JWT) signed with a .p8 key, as a backend sends it in `authorization: bearer`.")

        @Option(help: "The .p8 private key.")
        var key: String

        @Option(help: "Team id (the token's iss).")
        var teamId: String

        @Option(help: "Key id (the token's kid).")
        var keyId: String

        func run() async throws {
            let pem: String
            do {
                pem = try String(contentsOfFile: key, encoding: .utf8)
            } catch {
                throw ValidationError("--key: cannot read \(key)")
            }
            guard let signer = try? ProviderTokenSigner(teamID: teamId, keyID: keyId, p8PEM: pem) else {
                throw ValidationError("--key: \(key) is not a P-256 private key in PEM (.p8) form")
            }
            print(try signer.token(issuedAt: UnixTime.now()))
        }
    }
}
