/// An app's state on the device, as iOS knows it: what a device reports, what the gateway's policy
/// decides by, and what the simulated iPhone's runtime moves through.
public enum AppState: String, Sendable, Codable, CaseIterable {
    case foreground
    case background
    case suspended
    case notRunning = "not_running"
    /// Swiped away by the user: no silent wakes until the user opens it again.
    case forceQuit = "force_quit"
}
