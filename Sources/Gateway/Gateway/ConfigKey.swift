import Foundation

/// One configuration key, declared once: its name, default and meaning (for `pushgate config`, the
/// YAML file in Config/ and the README's table), what a valid value looks like, and where its typed
/// value goes in `GatewayConfiguration`. The file, the environment (`PUSHGATE_` + the name in upper case
/// with `.` as `_`) and the `--set name=value` flag all address these names.
public struct ConfigKey: Sendable {
    public let name: String
    public let defaultValue: String
    public let doc: String
    /// What a valid value is, for the error that names the key ("a whole number from 0 to 65535").
    public let expected: String
    /// The value as `pushgate config` shows it (secrets masked).
    let printable: @Sendable (String) -> String
    /// Parses the (trimmed) text into the configuration; nil when it did, else the text (or the part of
    /// it) that is not valid.
    let apply: @Sendable (String, inout GatewayConfiguration) -> String?

    public var environmentVariable: String {
        "PUSHGATE_" + name.uppercased().replacingOccurrences(of: ".", with: "_")
    }

    /// A key whose text `parse` turns into a value that `set` puts in place. `parse` returns nil for
    /// a text that is not valid, or throws `Refused` to name the part of it that is not.
    static func custom<Value>(
        _ name: String, _ defaultValue: String, expected: String, secret: Secret = .none, _ doc: String,
        parse: @escaping @Sendable (String) throws(Refused) -> Value?,
        set: @escaping @Sendable (inout GatewayConfiguration, Value) -> Void
    ) -> ConfigKey {
        ConfigKey(
            name: name, defaultValue: defaultValue, doc: doc, expected: expected, printable: secret.mask,
            apply: { text, configuration in
                do throws(Refused) {
                    guard let value = try parse(text) else { return text }
                    set(&configuration, value)
                    return nil
                } catch {
                    return error.part
                }
            })
    }

    /// The part of a value that is not valid (one entry of a list).
    struct Refused: Error {
        let part: String
    }

    /// How `pushgate config` shows a secret's value.
    enum Secret {
        case none
        case masked
        /// A URL whose password is masked.
        case url(@Sendable (String) -> String)

        var mask: @Sendable (String) -> String {
            switch self {
            case .none: { $0 }
            case .masked: { $0.isEmpty ? $0 : "***" }
            case .url(let redact): redact
            }
        }
    }
}

extension ConfigKey {
    static func int<Value: BinaryInteger & SendableMetatype>(
        _ name: String, _ defaultValue: String, in range: ClosedRange<Int>, _ doc: String,
        to path: any WritableKeyPath<GatewayConfiguration, Value> & Sendable
    ) -> ConfigKey {
        int(name, defaultValue, in: range, doc) { $0[keyPath: path] = Value($1) }
    }

    static func int(
        _ name: String, _ defaultValue: String, in range: ClosedRange<Int>, _ doc: String,
        set: @escaping @Sendable (inout GatewayConfiguration, Int) -> Void
    ) -> ConfigKey {
        custom(
            name, defaultValue, expected: "a whole number from \(range.lowerBound) to \(range.upperBound)", doc,
            parse: { Int($0).flatMap { range.contains($0) ? $0 : nil } }, set: set)
    }

    static func number(
        _ name: String, _ defaultValue: String, in range: ClosedRange<Double>, _ doc: String,
        to path: any WritableKeyPath<GatewayConfiguration, Double> & Sendable
    ) -> ConfigKey {
        number(name, defaultValue, in: range, doc) { $0[keyPath: path] = $1 }
    }

    static func number(
        _ name: String, _ defaultValue: String, in range: ClosedRange<Double>, _ doc: String,
        set: @escaping @Sendable (inout GatewayConfiguration, Double) -> Void
    ) -> ConfigKey {
        custom(
            name, defaultValue, expected: "a number from \(range.lowerBound) to \(range.upperBound)", doc,
            parse: { Double($0).flatMap { $0.isFinite && range.contains($0) ? $0 : nil } }, set: set)
    }

    static func flag(
        _ name: String, _ defaultValue: String, _ doc: String,
        to path: any WritableKeyPath<GatewayConfiguration, Bool> & Sendable
    ) -> ConfigKey {
        custom(
            name, defaultValue, expected: "true or false", doc,
            parse: { text in
                switch text.lowercased() {
                case "true", "yes", "on", "1": true
                case "false", "no", "off", "0": false
                default: nil
                }
            }, set: { $0[keyPath: path] = $1 })
    }

    /// Text; `nonEmpty` refuses an empty value.
    static func text(
        _ name: String, _ defaultValue: String, nonEmpty: Bool = false, secret: Secret = .none, _ doc: String,
        to path: any WritableKeyPath<GatewayConfiguration, String> & Sendable
    ) -> ConfigKey {
        custom(
            name, defaultValue, expected: "a non-empty value", secret: secret, doc,
            parse: { nonEmpty && $0.isEmpty ? nil : $0 }, set: { $0[keyPath: path] = $1 })
    }

    /// Text, or nil when empty.
    static func optionalText(
        _ name: String, secret: Secret = .none, _ doc: String,
        to path: any WritableKeyPath<GatewayConfiguration, String?> & Sendable
    ) -> ConfigKey {
        custom(
            name, "", expected: "text", secret: secret, doc, parse: { $0 },
            set: { $0[keyPath: path] = $1.isEmpty ? nil : $1 })
    }

    /// One of an enumeration's raw values.
    static func choice<Value: RawRepresentable & CaseIterable & Sendable>(
        _ name: String, _ defaultValue: Value, _ doc: String,
        to path: any WritableKeyPath<GatewayConfiguration, Value> & Sendable
    ) -> ConfigKey where Value.RawValue == String {
        let names = Value.allCases.map(\.rawValue)
        let expected =
            names.count > 2
            ? "one of " + names.joined(separator: ", ") : names.joined(separator: " or ")
        return custom(
            name, defaultValue.rawValue, expected: expected, doc, parse: { Value(rawValue: $0) },
            set: { $0[keyPath: path] = $1 })
    }
}

extension ConfigKey: Hashable {
    public static func == (a: ConfigKey, b: ConfigKey) -> Bool { a.name == b.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}
