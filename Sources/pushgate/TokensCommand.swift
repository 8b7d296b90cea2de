import ArgumentParser
import Foundation
import Gateway
import GatewayFiles
import ProviderAPI
import PushModel
import WallClock

struct TokensCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens",
        abstract: "Device tokens for scripting (the device hub issues them to simulated devices).",
        subcommands: [Register.self, Uninstall.self, List.self])

    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a device token for a bundle id and print it.")

        @OptionGroup var options: ConfigOptions

        @Option(help: "The app's bundle id (the apns-topic of its alert and background pushes).")
        var topic: String

        @Option(help: "The token in hex (default: 64 random hex characters).")
        var token: String?

        @Option(help: "How many tokens to register (with --token absent).")
        var count = 1

        func run() async throws {
            let configuration = try failing { try options.load() }
            guard Topic(topic) != nil else { throw ValidationError("--topic '\(topic)' is not a valid topic") }
            if token != nil, count != 1 { throw ValidationError("--count goes with a random token, not with --token") }
            var tokens: [DeviceToken] = []
            if let token {
                guard let parsed = DeviceToken(token, lengths: configuration.provider.deviceTokenLengths) else {
                    throw ValidationError(
                        "--token must be hex of \(configuration.provider.deviceTokenLengths) characters")
                }
                tokens = [parsed]
            } else {
                tokens = (0..<max(1, count)).map { _ in
                    DeviceToken((0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined())!
                }
            }
            try failing { try RegistryFiles.registerTokens(tokens, bundleID: topic, in: configuration.tokensFile) }
            for token in tokens { print(token.hex) }
        }
    }

    struct Uninstall: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Mark a token's app as uninstalled: pushes to it get 410 Unregistered with the timestamp.")

        @OptionGroup var options: ConfigOptions

        @Argument(help: "The device token (hex).")
        var token: String

        func run() async throws {
            let configuration = try failing { try options.load() }
            guard let parsed = DeviceToken(token, lengths: configuration.provider.deviceTokenLengths) else {
                throw ValidationError(
                    "'\(token)' is not a hex device token of \(configuration.provider.deviceTokenLengths) characters")
            }
            let found = try failing {
                try RegistryFiles.unregisterToken(parsed, at: UnixTime.now(), in: configuration.tokensFile)
            }
            guard found else {
                throw ValidationError("token \(parsed.hex) is not registered in \(configuration.tokensFile)")
            }
            print("\(parsed.hex) unregistered")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the registered tokens.")

        @OptionGroup var options: ConfigOptions

        func run() async throws {
            let configuration = try failing { try options.load() }
            let tokens = try failing {
                try RegistryFiles.loadTokens(
                    configuration.tokensFile, lengths: configuration.provider.deviceTokenLengths)
            }
            for (token, status) in tokens.sorted(by: { $0.key.hex < $1.key.hex }) {
                switch status {
                case .active(let bundle): print("\(token.hex)  \(bundle)  active")
                case .unregistered(let bundle, let since):
                    print("\(token.hex)  \(bundle)  unregistered at \(since.milliseconds)")
                case .expired(let bundle, let since): print("\(token.hex)  \(bundle)  expired at \(since.milliseconds)")
                }
            }
        }
    }
}
