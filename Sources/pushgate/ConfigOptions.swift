import ArgumentParser
import Foundation
import Gateway
import IPhoneFleet
import GatewayFiles

/// The options every command that reads the configuration shares.
struct ConfigOptions: ParsableArguments {
    @Option(name: .long, help: "YAML configuration file (default: $PUSHGATE_CONFIG, else the embedded defaults).")
    var config: String?

    @Option(
        name: .customLong("set"),
        help: ArgumentHelp("Override a configuration key; repeatable.", valueName: "key=value"))
    var overrides: [String] = []

    func load() throws -> GatewayConfiguration {
        try GatewayConfiguration(loadRaw())
    }

    /// The layered configuration; what it ignored is said on standard error.
    func loadRaw() throws -> RawConfiguration {
        let environment = ProcessInfo.processInfo.environment
        let raw = try RawConfiguration.load(
            path: config ?? environment["PUSHGATE_CONFIG"], environment: environment, flags: overrides)
        for warning in raw.warnings { FileHandle.standardError.write(Data("warning: \(warning)\n".utf8)) }
        return raw
    }
}

/// Exits with a message naming the problem (a configuration key, a file, a flag) instead of a trace.
func failing<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch { throw described(error) }
}

func asyncFailing<T>(_ body: () async throws -> T) async throws -> T {
    do { return try await body() } catch { throw described(error) }
}

private func described(_ error: any Error) -> any Error {
    switch error {
    case let error as ConfigError: return ValidationError(error.description)
    case let error as RegistryFileError: return ValidationError(error.description)
    case let error as IPhoneFleetError:
        return error.isUsage ? ValidationError(error.description) : CommandFailure(error.description)
    default: return error
    }
}
