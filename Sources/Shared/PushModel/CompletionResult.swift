/// The app's answer to a background wake (its completion handler's argument, the device protocol's
/// `complete` result): what the policy counts and what a simulated app reports.
public enum CompletionResult: String, Sendable, Codable, CaseIterable {
    case newData
    case noData
    case failed
}
