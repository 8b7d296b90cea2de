import Yams

/// What is wrong with a YAML file (a profile, a scenario), as one line naming the line of the file and
/// the key.
public enum YAMLProblem {
    /// A decoding error: the parser's own position for text that is not YAML, and for a value of the
    /// wrong kind the line its key is on (found by following the error's coding path through the
    /// document's nodes).
    public static func describe(_ error: any Error, in text: String) -> String {
        switch error as? DecodingError {
        case .dataCorrupted(let context), .typeMismatch(_, let context), .valueNotFound(_, let context):
            if context.codingPath.isEmpty, let underlying = context.underlyingError as? YamlError {
                return "not valid YAML: \(underlying)"
            }
            return line(of: context.codingPath, in: text) + "\(name(context.codingPath))\(context.debugDescription)"
        case .keyNotFound(let key, let context):
            let path = context.codingPath + [key]
            return line(of: context.codingPath, in: text) + "\(name(path).dropLast(2)): missing"
        default:
            return "\(error)"
        }
    }

    /// A problem found after decoding ("apps[0].fetch: expected …") with the line its key is on in front.
    public static func located(_ problem: String, in text: String) -> String {
        guard let colon = problem.firstIndex(of: ":") else { return problem }
        var path: [any CodingKey] = []
        for part in problem[..<colon].split(separator: ".") {
            var name = part
            var indices: [Int] = []
            while name.hasSuffix("]"), let open = name.lastIndex(of: "["),
                let index = Int(name[name.index(after: open)...].dropLast())
            {
                indices.insert(index, at: 0)
                name = name[..<open]
            }
            path.append(PathKey(stringValue: String(name)))
            path += indices.map { PathKey(intValue: $0) }
        }
        return line(of: path, in: text) + problem
    }
}

private struct PathKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        stringValue = String(intValue)
        self.intValue = intValue
    }
}

/// `key.sub[2].leaf: ` for a coding path ("" for the top).
private func name(_ path: [any CodingKey]) -> String {
    let joined = path.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
    return joined.isEmpty ? "" : String(joined.drop { $0 == "." }) + ": "
}

/// "line N: " for the node the coding path leads to (its key's line for a mapping's value), or "".
private func line(of path: [any CodingKey], in text: String) -> String {
    guard var node = try? Yams.compose(yaml: text) else { return "" }
    var line = node.mark?.line
    for key in path {
        if let index = key.intValue, case .sequence(let items) = node, index < items.count {
            node = items[index]
            line = node.mark?.line
        } else if case .mapping(let pairs) = node,
            let pair = pairs.first(where: { $0.key.string == key.stringValue })
        {
            node = pair.value
            line = pair.key.mark?.line
        } else {
            break
        }
    }
    return line.map { "line \($0): " } ?? ""
}
