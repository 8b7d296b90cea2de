/// Live Activities on the Lock Screen: each shows the newest version its updates brought, and the user
/// sees them whenever the screen comes on ([LA] in docs/live-activities.md).
extension DeviceRuntime {
    /// An update for activity `activity` of `app`: applied when its `timestamp` is later than that of
    /// the content shown, whatever version it carries, and ignored otherwise (ActivityKit: the system
    /// displays the update with the latest timestamp; one as old or older is not shown).
    mutating func liveActivityUpdated(
        _ app: AppSlot, activity: Int, version: Int, timestamp: Int64, _ actions: inout [RuntimeAction]
    ) {
        guard table[app].activityVersions.indices.contains(activity) else { return }
        if let shown = table[app].activityTimestamps[activity], shown >= timestamp { return }
        table[app].activityVersions[activity] = version
        table[app].activityTimestamps[activity] = timestamp
        actions.append(.activityUpdated(app: app, activity: activity, version: version))
    }

    /// The screen came on: every Live Activity, widget and control is seen with the version it shows.
    mutating func screenCameOn(_ actions: inout [RuntimeAction]) {
        for slot in table.slots {
            for (activity, version) in table[slot].activityVersions.enumerated() {
                actions.append(.activityViewed(app: slot, activity: activity, contentVersion: version))
            }
            for surface in WidgetKitSurface.allCases where table[slot].behaviour.surfaces.contains(surface) {
                actions.append(
                    .widgetKitViewed(app: slot, surface: surface, contentVersion: table[slot].shown[surface]))
            }
        }
    }
}
