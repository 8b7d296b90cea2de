import DeviceRuntime
import Foundation

/// Reads an ActivityKit payload's `aps` (docs/live-activities.md) into a `LiveActivityPush`: nil when it
/// has no `event` of start, update or end, or no numeric `timestamp` — the device does not apply it.
enum LiveActivityPayload {
    static func parse(_ payload: String) -> LiveActivityPush? {
        guard let root = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
            let aps = root["aps"] as? [String: Any],
            let event = (aps["event"] as? String).flatMap(LiveActivityPush.Event.init(rawValue:)),
            let timestamp = seconds(aps["timestamp"])
        else { return nil }
        var content: String?
        if let state = aps["content-state"], JSONSerialization.isValidJSONObject(state),
            let data = try? JSONSerialization.data(withJSONObject: state, options: [.sortedKeys])
        {
            content = String(decoding: data, as: UTF8.self)
        }
        return LiveActivityPush(
            event: event, timestamp: timestamp, contentState: content, staleDate: seconds(aps["stale-date"]),
            dismissalDate: seconds(aps["dismissal-date"]),
            relevanceScore: (aps["relevance-score"] as? Double) ?? (aps["relevance-score"] as? Int).map(Double.init),
            attributesType: aps["attributes-type"] as? String)
    }

    /// Whether the push has an `aps.alert`: it lights the device (the expanded presentation or a banner,
    /// [LA]) as an alert does.
    static func alerts(_ payload: String) -> Bool {
        guard let root = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
            let aps = root["aps"] as? [String: Any]
        else { return false }
        return aps["alert"] != nil
    }

    /// The content version an announcement's update carries (`content-state.version`, as
    /// `AnnouncementRequest.liveActivityUpdate` writes it); nil for any other payload.
    static func version(_ payload: String) -> Int? {
        guard let root = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
            let aps = root["aps"] as? [String: Any], let state = aps["content-state"] as? [String: Any]
        else { return nil }
        return state["version"] as? Int
    }

    /// A JSON number of seconds (an integer, or a whole part of a fraction).
    private static func seconds(_ value: Any?) -> Int64? {
        switch value {
        case is Bool: return nil
        case let int as Int: return Int64(int)
        case let double as Double where double.isFinite: return Int64(double)
        default: return nil
        }
    }
}
