import AdminAPI
import ArgumentParser
import Foundation
import Gateway

struct LookupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookup",
        abstract:
            "Ask a running gateway: a notification's journey, a token's or a device's state and budgets, the counters.",
        subcommands: [Notification.self, Token.self, Device.self, Counters.self])

    struct Notification: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "What happened to a notification: accepted, held, released, woken, completed, and the rule for each.")
        @OptionGroup var options: ConfigOptions
        @Argument(help: "The apns-id, or the apns-unique-id a development gateway answered with.") var apnsID: String
        @Flag(help: "Print the admin API's JSON instead of a table.") var json = false
        func run() async throws { try await lookup("notifications", apnsID, options, json: json) }
    }

    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A device token's device, app, connection and silent budget (left, next refill, held, strikes).")
        @OptionGroup var options: ConfigOptions
        @Argument(help: "The device token (hex).") var token: String
        @Flag(help: "Print the admin API's JSON instead of a table.") var json = false
        func run() async throws { try await lookup("tokens", token, options, json: json) }
    }

    struct Device: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "A device's connection, conditions and owner node, and each app's token and silent budget (held pushes, penalties)."
        )
        @OptionGroup var options: ConfigOptions
        @Argument(help: "The device id (from its registration).") var deviceID: String
        @Flag(help: "Print the admin API's JSON instead of a table.") var json = false
        func run() async throws { try await lookup("devices", deviceID, options, json: json) }
    }

    struct Counters: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The policy's and the hub's counters.")
        @OptionGroup var options: ConfigOptions
        func run() async throws { try await lookup(nil, "counters", options, json: true) }
    }
}

/// GETs `/v1/<resource>/<key>` (`/v1/<key>` without a resource) and prints it as a table, or as JSON.
private func lookup(_ resource: String?, _ key: String, _ options: ConfigOptions, json: Bool) async throws {
    let configuration = try failing { try options.load() }
    let host = ["0.0.0.0", "::"].contains(configuration.admin.host) ? "127.0.0.1" : configuration.admin.host
    let escaped = key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? key
    let path = "/v1/" + (resource.map { "\($0)/" } ?? "") + escaped
    let (status, body) = try await AdminClient.get(
        host: host, port: configuration.admin.port, path: path, token: configuration.adminToken)
    let table = status == 200 && !json ? resource.flatMap { AdminTables.render(resource: $0, json: body) } : nil
    let text = table ?? body
    print(text, terminator: text.hasSuffix("\n") ? "" : "\n")
    if status != 200 { throw ExitCode(1) }
}
