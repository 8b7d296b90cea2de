import PushModel

/// A device's apps in installation order, found by bundle id. A device has a handful, so a scan beats
/// hashing; and the subscript reads and changes an app in place (a dictionary's getter copied the whole
/// `AppRuntime`, with a retain per field, on every read: a forecast's profile put that at 14 % of its time).
struct AppTable: Sendable {
    private(set) var list: [AppRuntime] = []

    mutating func append(_ app: AppRuntime) { list.append(app) }

    func index(of bundleID: String) -> Int? {
        for index in list.indices where list[index].bundleID == bundleID { return index }
        return nil
    }

    func contains(_ bundleID: String) -> Bool { index(of: bundleID) != nil }

    /// The app's state, or nil when it is not installed (read in place: `find` copies the whole app).
    func state(of bundleID: String) -> AppState? { index(of: bundleID).map { list[$0].state } }

    /// A copy of the app, or nil when it is not installed.
    func find(_ bundleID: String) -> AppRuntime? { index(of: bundleID).map { list[$0] } }

    /// The installed app `bundleID` (the runtime's own callers know it is installed).
    subscript(bundleID: String) -> AppRuntime {
        _read { yield list[index(of: bundleID)!] }
        _modify { yield &list[index(of: bundleID)!] }
    }

    subscript(position index: Int) -> AppRuntime {
        _read { yield list[index] }
        _modify { yield &list[index] }
    }
}
