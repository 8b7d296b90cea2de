import Foundation
import Yams

/// Where a configuration value came from, so an error can say where to fix it.
public enum ConfigSource: Sendable, Equatable, CustomStringConvertible {
    case defaultValue
    case file(String)
    case environment(String)
    case flag

    public var description: String {
        switch self {
        case .defaultValue: return "the default"
        case .file(let path): return "file \(path)"
        case .environment(let variable): return "environment variable \(variable)"
        case .flag: return "--set"
        }
    }
}

/// A configuration problem, naming the key, where the value came from, and what is wrong.
public struct ConfigError: Error, CustomStringConvertible, Equatable {
    public var key: String
    public var source: ConfigSource?
    public var message: String

    public var description: String {
        if let source { return "configuration key '\(key)' (from \(source)): \(message)" }
        return "configuration key '\(key)': \(message)"
    }
}

/// The configuration as text, layered: defaults, then the file, then the environment, then `--set` flags.
public struct RawConfiguration: Sendable {
    private(set) var values: [String: (value: String, source: ConfigSource)]
    /// What was ignored and why (a `PUSHGATE_*` variable that is no key: a wrapper script's own, or a
    /// typo): the commands print these at start.
    public private(set) var warnings: [String] = []

    public init(
        fileYAML: String? = nil, filePath: String = "pushgate.yaml", environment: [String: String] = [:],
        flags: [String] = []
    ) throws {
        values = Dictionary(
            uniqueKeysWithValues: ConfigKeys.all.map { ($0.name, ($0.defaultValue, ConfigSource.defaultValue)) })
        if let fileYAML { try applyFile(fileYAML, path: filePath) }
        try applyEnvironment(environment)
        try applyFlags(flags)
    }

    /// Reads the file named by `path` (if any), the process environment and the flags.
    public static func load(path: String?, environment: [String: String], flags: [String]) throws -> RawConfiguration {
        guard let path else { return try RawConfiguration(environment: environment, flags: flags) }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigError(
                key: "config", source: .file(path), message: "cannot read the file: \(error.localizedDescription)")
        }
        return try RawConfiguration(fileYAML: text, filePath: path, environment: environment, flags: flags)
    }

    public func value(_ name: String) -> (value: String, source: ConfigSource) {
        guard let entry = values[name] else {
            preconditionFailure("configuration key \(name) is not in ConfigKeys.all")
        }
        return entry
    }

    private mutating func applyFile(_ text: String, path: String) throws {
        // The node tree, walked here: Yams' `load` builds `Any` and traps on a key that is no plain
        // scalar (`? [a]: 1`), which fuzzing found (Fuzz/regressions/configuration).
        let document: Node?
        do {
            document = try Yams.compose(yaml: text)
        } catch {
            throw ConfigError(key: "config", source: .file(path), message: "not valid YAML: \(error)")
        }
        guard let document else { return }  // an empty file
        guard case .mapping(let root) = document else {
            throw ConfigError(key: "config", source: .file(path), message: "the top level must be a mapping of keys")
        }
        try flatten(root, prefix: "", path: path)
    }

    private mutating func flatten(_ mapping: Node.Mapping, prefix: String, path: String) throws {
        for (keyNode, value) in mapping {
            guard case .scalar(let key) = keyNode else {
                throw ConfigError(
                    key: prefix.isEmpty ? "config" : prefix, source: .file(path),
                    message: "a key that is not plain text (line \((keyNode.mark?.line).map(String.init) ?? "?"))")
            }
            let name = prefix.isEmpty ? key.string : prefix + "." + key.string
            if case .mapping(let nested) = value {
                try flatten(nested, prefix: name, path: path)
                continue
            }
            guard ConfigKeys.byName[name] != nil else {
                throw ConfigError(
                    key: name, source: .file(path), message: "unknown key (`pushgate config` lists the keys)")
            }
            guard case .scalar = value else {
                throw ConfigError(key: name, source: .file(path), message: "expected a single value, not a list")
            }
            // As YAML types it (a scalar's `any` is its tag's constructor; no mapping is built here).
            let text: String
            switch value.any {
            case is NSNull: text = ""
            case let string as String: text = string
            case let bool as Bool: text = bool ? "true" : "false"
            case let int as Int: text = String(int)
            case let double as Double: text = String(double)
            case let other: text = "\(other)"
            }
            values[name] = (text, .file(path))
        }
    }

    /// Variables that name the configuration file rather than a key.
    static let nonKeyVariables: Set<String> = ["PUSHGATE_CONFIG"]

    private mutating func applyEnvironment(_ environment: [String: String]) throws {
        let byVariable = Dictionary(uniqueKeysWithValues: ConfigKeys.all.map { ($0.environmentVariable, $0.name) })
        for (variable, value) in environment
        where variable.hasPrefix("PUSHGATE_") && !Self.nonKeyVariables.contains(variable) {
            guard let name = byVariable[variable] else {
                // A wrapper's PUSHGATE_BIN or PUSHGATE_VERSION must not stop every command; a typo is named.
                warnings.append(
                    "environment variable \(variable) is no configuration key, ignored (`pushgate config` lists the keys)"
                )
                continue
            }
            values[name] = (value, .environment(variable))
        }
    }

    private mutating func applyFlags(_ flags: [String]) throws {
        for flag in flags {
            guard let equals = flag.firstIndex(of: "=") else {
                throw ConfigError(key: flag, source: .flag, message: "expected --set key=value")
            }
            let name = String(flag[..<equals])
            guard ConfigKeys.byName[name] != nil else {
                throw ConfigError(key: name, source: .flag, message: "unknown key (`pushgate config` lists the keys)")
            }
            values[name] = (String(flag[flag.index(after: equals)...]), .flag)
        }
    }
}
