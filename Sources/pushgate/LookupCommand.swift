import ArgumentParser
import Gateway

struct LookupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookup",
        abstract: "Ask a running gateway: a notification's journey, a token's device and budget, the counters.",
        subcommands: [Notification.self, Token.self, Counters.self])

    struct Notification: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "What happened to a notification: accepted, held, released, woken, completed, and the rule for each.")
        @OptionGroup var options: ConfigOptions
        @Argument(help: "The apns-id.") var apnsID: String
        func run() async throws { try await lookup("/v1/notifications/\(apnsID)", options) }
    }

    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A device token's device, app, connection and silent budget (left, next refill, held, strikes).")
        @OptionGroup var options: ConfigOptions
        @Argument(help: "The device token (hex).") var token: String
        func run() async throws { try await lookup("/v1/tokens/\(token)", options) }
    }

    struct Counters: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The policy's and the hub's counters.")
        @OptionGroup var options: ConfigOptions
        func run() async throws { try await lookup("/v1/counters", options) }
    }
}

private func lookup(_ path: String, _ options: ConfigOptions) async throws {
    let configuration = try failing { try options.load() }
    let host = ["0.0.0.0", "::"].contains(configuration.admin.host) ? "127.0.0.1" : configuration.admin.host
    let (status, body) = try await AdminClient.get(
        host: host, port: configuration.admin.port, path: path, token: configuration.adminToken)
    print(body, terminator: body.hasSuffix("\n") ? "" : "\n")
    if status != 200 { throw ExitCode(1) }
}
