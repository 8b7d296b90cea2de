import PushModel

/// What an app's backend POSTs to the provider API to announce a version of its content: the headers
/// and body of its silent push and of its alert. `ContentAnnouncer` sends them over HTTP/2; a forecast
/// puts them through the provider API's own parsing (`RequestHead`, `ParsedHead.notification`) and the
/// policy. One definition, so both announce the same pushes.
public struct AnnouncementRequest: Sendable {
    public var silent: Bool
    public var headers: [(String, String)]
    public var body: [UInt8]

    /// A silent push (`content-available: 1`, background, priority 5). It carries
    /// `apns-collapse-id: content`, so a newer announcement replaces one still held.
    public static func silent(topic: String, version: Int) -> AnnouncementRequest {
        AnnouncementRequest(
            silent: true,
            headers: [
                ("apns-topic", topic), ("apns-push-type", "background"), ("apns-priority", "5"),
                ("apns-collapse-id", "content"),
            ],
            body: Array(#"{"aps":{"content-available":1},"version":\#(version)}"#.utf8))
    }

    /// An alert (priority 10) telling the user the version is out.
    public static func alert(topic: String, version: Int) -> AnnouncementRequest {
        AnnouncementRequest(
            silent: false,
            headers: [("apns-topic", topic), ("apns-push-type", "alert"), ("apns-priority", "10")],
            body: Array(
                #"{"aps":{"alert":{"title":"New content","body":"Version \#(version) is out"}},"version":\#(version)}"#
                    .utf8))
    }

    /// A widget or control push announcing the version (`apns-push-type: widgets` or `controls`, the
    /// topic's suffix for it, `content-changed`): the app's widget or control reloads.
    public static func reload(_ surface: WidgetKitSurface, topic: String, version: Int) -> AnnouncementRequest {
        AnnouncementRequest(
            silent: false,
            headers: [
                ("apns-topic", topic + surface.pushType.topicSuffix!), ("apns-push-type", surface.pushType.rawValue),
                ("apns-priority", "10"),
            ],
            body: Array(#"{"aps":{"content-changed":true},"version":\#(version)}"#.utf8))
    }

    /// The `"version":N` an announcement's payload carries, or nil.
    public static func version(in payload: [UInt8]) -> Int? {
        let key = Array(#""version":"#.utf8)
        guard payload.count > key.count else { return nil }
        for start in 0...(payload.count - key.count) where payload[start..<(start + key.count)].elementsEqual(key) {
            var value = 0
            var index = start + key.count
            while index < payload.count, (48...57).contains(payload[index]) {
                value = value * 10 + Int(payload[index] - 48)
                index += 1
            }
            return index > start + key.count ? value : nil
        }
        return nil
    }

    /// An update of one Live Activity to the version (pushed to the activity's token; `apns-topic`
    /// `<bundle>.push-type.liveactivity`): `timestamp` is the publish time, so the device shows the newest.
    public static func liveActivityUpdate(topic: String, version: Int, priority: Int, timestamp: Int64)
        -> AnnouncementRequest
    {
        AnnouncementRequest(
            silent: false,
            headers: [
                ("apns-topic", topic + ".push-type.liveactivity"), ("apns-push-type", "liveactivity"),
                ("apns-priority", String(priority)),
            ],
            body: liveActivityBody(version: version, timestamp: timestamp))
    }

    /// A broadcast of the version on a channel (`POST /4/broadcasts/apps/<bundle>` with
    /// `apns-channel-id`): the same update, once for every subscriber.
    public static func broadcast(channelID: String, version: Int, timestamp: Int64) -> AnnouncementRequest {
        AnnouncementRequest(
            silent: false,
            headers: [("apns-channel-id", channelID), ("apns-push-type", "liveactivity"), ("apns-priority", "10")],
            body: liveActivityBody(version: version, timestamp: timestamp))
    }

    static func liveActivityBody(version: Int, timestamp: Int64) -> [UInt8] {
        Array(
            #"{"aps":{"event":"update","timestamp":\#(timestamp),"content-state":{"version":\#(version)}},"version":\#(version)}"#
                .utf8)
    }

    /// What `announce` sends for one version: the silent push first, then the alert.
    public static func requests(_ announce: AppProfile.Announcement, topic: String, version: Int)
        -> [AnnouncementRequest]
    {
        (announce.sendsSilent ? [silent(topic: topic, version: version)] : [])
            + (announce.sendsAlert ? [alert(topic: topic, version: version)] : [])
    }
}
