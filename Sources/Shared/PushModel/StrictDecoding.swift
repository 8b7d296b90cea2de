/// For configuration-like files (profiles, scenarios): every key optional, an unknown key an error that
/// names it (a misspelt key silently ignored is a setting silently not applied).
public func rejectUnknownKeys<Keys: CodingKey & CaseIterable>(_ decoder: any Decoder, known: Keys.Type) throws {
    let container = try decoder.container(keyedBy: AnyCodingKey.self)
    let names = Set(Keys.allCases.map(\.stringValue))
    if let unknown = container.allKeys.first(where: { !names.contains($0.stringValue) }) {
        throw DecodingError.dataCorrupted(
            .init(
                codingPath: decoder.codingPath + [unknown],
                debugDescription:
                    "unknown key '\(unknown.stringValue)' (known: \(Keys.allCases.map(\.stringValue).joined(separator: ", ")))"
            ))
    }
}

public struct AnyCodingKey: CodingKey {
    public var stringValue: String
    public var intValue: Int?
    public init?(stringValue: String) { self.stringValue = stringValue }
    public init?(intValue: Int) {
        self.stringValue = "\(intValue)"
        self.intValue = intValue
    }
}
