import PushModel

/// A device's apps in installation order: an app's `AppSlot` is its position. Found by bundle id only at
/// the edges (a device has a handful: a scan beats hashing); the subscripts read and change an app in
/// place (a copy of an `AppRuntime` costs a retain per field).
struct AppTable: Sendable {
    private(set) var list: [AppRuntime] = []

    mutating func append(_ app: AppRuntime) { list.append(app) }

    /// The slots in installation order (no array made: the runtime walks them on every event).
    var slots: LazyMapCollection<Range<Int>, AppSlot> { list.indices.lazy.map(AppSlot.init) }

    func slot(of bundleID: String) -> AppSlot? {
        for index in list.indices where list[index].bundleID == bundleID { return AppSlot(index) }
        return nil
    }

    func contains(_ app: AppSlot) -> Bool { Int(app.index) < list.count }

    /// The app's state, or nil when there is no such app.
    func state(of app: AppSlot) -> AppState? { contains(app) ? list[Int(app.index)].state : nil }

    /// A copy of the app, or nil when it is not installed.
    func find(_ bundleID: String) -> AppRuntime? { slot(of: bundleID).map { list[Int($0.index)] } }

    /// The app in `slot` (the runtime's own callers know it is there).
    subscript(app: AppSlot) -> AppRuntime {
        _read { yield list[Int(app.index)] }
        _modify { yield &list[Int(app.index)] }
    }
}
