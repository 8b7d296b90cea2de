import Foundation

/// Renders the key table as documents: the commented YAML file in Config/ and the README's Markdown table.
public enum ConfigDocument {
    /// Every key, nested as the file expects it, with its meaning as a comment and its default as the value.
    public static func yaml() -> String {
        var lines = [
            "# Pushgate configuration. Every key, with its default; `pushgate config` prints the effective values.",
            "# Each key can also be set by environment variable (PUSHGATE_ + the key in upper case, dots as _)",
            "# and by flag (--set key=value); the flag wins over the environment, which wins over this file.",
        ]
        var open: [Substring] = []
        for key in ConfigKeys.all {
            let parts = key.name.split(separator: ".")
            let parents = Array(parts.dropLast())
            var common = 0
            while common < min(open.count, parents.count), open[common] == parents[common] { common += 1 }
            open.removeLast(open.count - common)
            if common == 0, parents.isEmpty || open.isEmpty { lines.append("") }
            for parent in parents[common...] {
                lines.append(String(repeating: "  ", count: open.count) + parent + ":")
                open.append(parent)
            }
            let indent = String(repeating: "  ", count: parents.count)
            lines.append(indent + "# " + key.doc)
            lines.append(indent + parts.last! + ": " + quoted(key.defaultValue))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    public static func markdown() -> String {
        var lines = ["| key | default | meaning |", "|---|---|---|"]
        for key in ConfigKeys.all {
            let value = key.defaultValue.isEmpty ? "(empty)" : "`\(key.defaultValue)`"
            lines.append("| `\(key.name)` | \(value) | \(key.doc.replacingOccurrences(of: "|", with: "\\|")) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func quoted(_ value: String) -> String {
        if value.isEmpty { return "\"\"" }
        if value.first == "." || value.contains(":") || value.contains("#") { return "\"\(value)\"" }
        return value
    }
}
