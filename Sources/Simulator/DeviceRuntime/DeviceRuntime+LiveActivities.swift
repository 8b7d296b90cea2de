/// Live Activities on the Lock Screen: each shows the newest version its updates brought, and the user
/// sees them whenever the screen comes on ([LA] in docs/live-activities.md).
extension DeviceRuntime {
    /// An update for activity `activity` of `app`: applied when newer than what it shows (iOS shows the
    /// update with the latest `timestamp`; versions are published in order), ignored otherwise.
    mutating func liveActivityUpdated(_ app: AppSlot, activity: Int, version: Int, _ actions: inout [RuntimeAction]) {
        guard table[app].activityVersions.indices.contains(activity) else { return }
        if let shown = table[app].activityVersions[activity], shown >= version { return }
        table[app].activityVersions[activity] = version
        actions.append(.activityUpdated(app: app, activity: activity, version: version))
    }

    /// The screen came on: every Live Activity is seen with the version it shows.
    mutating func screenCameOn(_ actions: inout [RuntimeAction]) {
        for slot in table.slots {
            for (activity, version) in table[slot].activityVersions.enumerated() {
                actions.append(.activityViewed(app: slot, activity: activity, contentVersion: version))
            }
        }
    }
}
