import ArgumentParser
import Foundation
import Gateway

struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Check the configuration and print every key with its value and where it came from.")

    @OptionGroup var options: ConfigOptions

    @Flag(help: "Print the table of keys, defaults and meanings as Markdown (for the README).")
    var markdown = false

    @Flag(help: "Print a configuration file with every key at its default (Config/pushgate.yaml).")
    var yaml = false

    func run() async throws {
        if markdown { return print(ConfigDocument.markdown(), terminator: "") }
        if yaml { return print(ConfigDocument.yaml(), terminator: "") }
        let raw = try failing { try options.loadRaw() }
        _ = try failing { try GatewayConfiguration(raw) }
        let width = ConfigKeys.all.map(\.name.count).max() ?? 0
        for key in ConfigKeys.all {
            let (raw, source) = raw.value(key.name)
            let value = ConfigKeys.printable(key.name, raw)
            let padded = key.name.padding(toLength: width, withPad: " ", startingAt: 0)
            print("\(padded)  \(value.isEmpty ? "\"\"" : value)  (\(source))")
        }
    }
}
