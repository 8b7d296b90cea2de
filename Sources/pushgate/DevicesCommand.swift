import AdminAPI
import ArgumentParser
import Foundation
import Gateway
import NIOHTTP1

struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "Manage a running gateway's device identities.",
        subcommands: [Remove.self])

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Remove devices: each of their tokens answers 410 Unregistered from now on, held pushes are discarded, and the device cannot connect again (it must register anew)."
        )
        @OptionGroup var options: ConfigOptions
        @Argument(help: "Device ids (from their registration; `pushgate lookup token` shows a token's).")
        var deviceIDs: [String]

        func run() async throws {
            let configuration = try failing { try options.load() }
            let host = ["0.0.0.0", "::"].contains(configuration.admin.host) ? "127.0.0.1" : configuration.admin.host
            var failed = false
            for id in deviceIDs {
                let escaped = id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? id
                let (status, body) = try await AdminClient.request(
                    .DELETE, host: host, port: configuration.admin.port, path: "/v1/devices/" + escaped,
                    token: configuration.adminToken)
                if status == 200 {
                    print("removed \(id)")
                } else {
                    failed = true
                    let message = AdminError.message(in: body)
                    FileHandle.standardError.write(Data("\(id): \(message ?? body)\n".utf8))
                }
            }
            if failed { throw ExitCode(1) }
        }
    }
}
