import DeviceRuntime
import Foundation

/// Reads an ActivityKit payload's `aps` (docs/live-activities.md), once: the push (`push`: nil when it
/// has no `event` of start, update or end, or no numeric `timestamp` — the device does not apply it),
/// whether it alerts (an `aps.alert` lights the device, [LA]), and the content version an announcement
/// carries (`content-state.version`, as `AnnouncementRequest.liveActivityUpdate` writes it).
struct LiveActivityPayload {
    var push: LiveActivityPush?
    var alerts = false
    var version: Int?

    init(_ payload: String) {
        guard let root = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
            let aps = root["aps"] as? [String: Any]
        else { return }
        alerts = aps["alert"] != nil
        version = (aps["content-state"] as? [String: Any])?["version"] as? Int
        push = Self.push(aps)
    }

    private static func push(_ aps: [String: Any]) -> LiveActivityPush? {
        guard let event = (aps["event"] as? String).flatMap(LiveActivityPush.Event.init(rawValue:)),
            let timestamp = seconds(aps["timestamp"])
        else { return nil }
        var content: String?
        // Read from JSON, so valid JSON (`isValidJSONObject` cost a third of this function).
        if let state = aps["content-state"] as? [String: Any],
            let data = try? JSONSerialization.data(withJSONObject: state, options: [.sortedKeys])
        {
            content = String(decoding: data, as: UTF8.self)
        }
        return LiveActivityPush(
            event: event, timestamp: timestamp, contentState: content, staleDate: seconds(aps["stale-date"]),
            dismissalDate: seconds(aps["dismissal-date"]),
            relevanceScore: (aps["relevance-score"] as? Double) ?? (aps["relevance-score"] as? Int).map(Double.init),
            attributesType: aps["attributes-type"] as? String,
            attributes: (aps["attributes"] as? [String: Any]).flatMap {
                try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys])
            }.map { String(decoding: $0, as: UTF8.self) },
            inputPushChannel: aps["input-push-channel"] as? String)
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
