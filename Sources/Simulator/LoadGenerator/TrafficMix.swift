import NIOCore
import NIOHPACK
import PushModel

/// A device token and the topic to push to it with (a simulator's tokens file has one per line:
/// `token bundle_id`, and `token bundle_id start:<type>` or `… update:<activity id>` for a Live
/// Activity's tokens).
public struct PushTarget: Sendable, Equatable {
    public var token: String
    public var topic: String
    /// Which Live Activity token it is (`start:<type>`, `update:<id>`); nil: the app's own token.
    public var activity: String?

    public init(token: String, topic: String, activity: String? = nil) {
        self.token = token
        self.topic = topic
        self.activity = activity
    }

    /// `activity` of a broadcast channel's target: `token` is its `apns-channel-id`, `topic` its app.
    public static let channelMark = "channel"

    /// A broadcast channel of `bundleID` (`bench --channels`).
    public static func channel(_ channelID: String, bundleID: String) -> PushTarget {
        PushTarget(token: channelID, topic: bundleID, activity: channelMark)
    }

    /// Reads `token topic` lines (or bare tokens, pushed to `defaultTopic`); blank lines and `#` comments skipped.
    public static func parse(_ text: String, defaultTopic: String?) throws(ScenarioError) -> [PushTarget] {
        var targets: [PushTarget] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first, !first.hasPrefix("#") else { continue }
            guard DeviceToken(first, lengths: 2...1024) != nil else {
                throw ScenarioError("tokens line \(number + 1): not a hex device token: '\(first)'")
            }
            guard let topic = fields.count > 1 ? String(fields[1]) : defaultTopic else {
                throw ScenarioError("tokens line \(number + 1): no topic (give `token topic` lines or --topic)")
            }
            var activity: String?
            if fields.count > 2 {
                activity = String(fields[2])
                guard activity!.hasPrefix("start:") || activity!.hasPrefix("update:") else {
                    throw ScenarioError(
                        "tokens line \(number + 1): a third field names a Live Activity token (start:<type> or update:<id>), got '\(activity!)'"
                    )
                }
            }
            targets.append(PushTarget(token: String(first), topic: topic, activity: activity))
        }
        guard !targets.isEmpty else { throw ScenarioError("tokens: the file has no tokens") }
        return targets
    }
}

/// The targets by what may be pushed to them: the apps' own tokens, push-to-start tokens, and started
/// activities' update tokens. A kind goes to its own class, round robin.
public struct TargetPool: Sendable {
    private let own: [PushTarget]
    private let starts: [PushTarget]
    private let updates: [PushTarget]
    private let channels: [PushTarget]

    public init(_ targets: [PushTarget]) {
        own = targets.filter { $0.activity == nil }
        starts = targets.filter { $0.activity?.hasPrefix("start:") == true }
        updates = targets.filter { $0.activity?.hasPrefix("update:") == true }
        channels = targets.filter { $0.activity == PushTarget.channelMark }
    }

    private func targets(for payload: PushKind.Payload) -> [PushTarget] {
        switch payload.activityTokenPrefix {
        case "start:": starts
        case "update:": updates
        case PushTarget.channelMark: channels
        default: own
        }
    }

    /// The `index`-th target for a kind of `payload` (the pool has one: `problem` said so).
    public func target(for payload: PushKind.Payload, at index: Int) -> PushTarget {
        let list = targets(for: payload)
        return list[index % list.count]
    }

    /// A kind of the mix that has no token to go to, named; nil when every kind has one.
    public func problem(mix: [PushKind]) -> String? {
        for kind in mix where kind.weight > 0 && targets(for: kind.payload).isEmpty {
            switch kind.payload.activityTokenPrefix {
            case "start:":
                return
                    "mix kind '\(kind.name)' goes to push-to-start tokens, and the tokens file has none (`token bundle_id start:<type>` lines: simulate with a profile's live_activity_types)"
            case "update:":
                return
                    "mix kind '\(kind.name)' goes to Live Activity update tokens, and the tokens file has none (`token bundle_id update:<id>` lines: activities started by a push)"
            case PushTarget.channelMark:
                return "mix kind '\(kind.name)' is a broadcast: name the channels with --channels (apns-channel-ids)"
            default:
                return
                    "mix kind '\(kind.name)' goes to apps' own tokens, and the tokens file has only Live Activity tokens"
            }
        }
        return nil
    }
}

/// Turns a scenario's mix into requests: which kind comes next (by weight), its headers and its body
/// (built once per kind).
public struct TrafficMix: Sendable {
    public let kinds: [PushKind]
    private let cumulative: [Double]
    private let bodies: [ByteBuffer]

    public init(_ kinds: [PushKind]) {
        self.kinds = kinds
        var total = 0.0
        cumulative = kinds.map {
            total += $0.weight
            return total
        }
        bodies = kinds.map { ByteBuffer(bytes: Self.body(for: $0)) }
    }

    /// The kind of the next request.
    public func pick(_ random: inout FastRandom) -> Int {
        let total = cumulative.last ?? 0
        let point = Double(random.next() >> 11) / Double(1 << 53) * total
        return cumulative.firstIndex { point < $0 } ?? (kinds.count - 1)
    }

    /// The request's body: built once per kind, except an ActivityKit push's, which carries the send time.
    public func body(_ kind: Int, target: PushTarget, now: UnixTime, sequence: Int) -> ByteBuffer {
        switch kinds[kind].payload {
        case .liveActivityUpdate, .broadcast:
            return ByteBuffer(
                string:
                    #"{"aps":{"event":"update","timestamp":\#(now.seconds),"content-state":{"sequence":\#(sequence)}}}"#
            )
        case .liveActivityStart:
            let type = target.activity.map { String($0.dropFirst("start:".count)) } ?? ""
            return ByteBuffer(
                string: #"{"aps":{"event":"start","timestamp":\#(now.seconds),"attributes-type":"\#(type)","#
                    + #""attributes":{"name":"bench"},"content-state":{"sequence":\#(sequence)},"#
                    + #""alert":{"title":"Pushgate bench","body":"A Live Activity starts"}}}"#)
        default:
            return bodies[kind]
        }
    }

    /// The request's headers, as an APNs client sends them (`:scheme https` even over h2c).
    public func headers(
        kind index: Int, target: PushTarget, authorization: String?, authority: String, now: UnixTime,
        random: inout FastRandom
    ) -> HPACKHeaders {
        let kind = kinds[index]
        if kind.payload == .broadcast { return broadcastHeaders(kind, target, authorization, authority, now) }
        var headers: HPACKHeaders = [
            ":method": "POST", ":scheme": "https", ":path": "/3/device/" + target.token, ":authority": authority,
            "apns-topic": target.topic + Self.topicSuffix(kind),
        ]
        if let authorization { headers.add(name: "authorization", value: authorization) }
        if let pushType = kind.push_type { headers.add(name: "apns-push-type", value: pushType) }
        if let priority = kind.priority { headers.add(name: "apns-priority", value: String(priority)) }
        if let expiration = kind.expiration_seconds {
            headers.add(name: "apns-expiration", value: expiration == 0 ? "0" : String(now.seconds + Int64(expiration)))
        }
        if let ids = kind.collapse_ids, ids > 0 {
            headers.add(name: "apns-collapse-id", value: "\(kind.name)-\(random.next() % UInt64(ids))")
        }
        return headers
    }

    /// What `apns-topic` adds to the app's bundle id: a Live Activity token's suffix, else the push
    /// type's (`.push-type.widgets`, `.voip`, …), else nothing.
    static func topicSuffix(_ kind: PushKind) -> String {
        if kind.payload.activityTokenPrefix != nil { return PushType.liveactivity.topicSuffix! }
        return kind.push_type.flatMap { PushType(rawValue: $0)?.topicSuffix } ?? ""
    }

    /// A broadcast's: its app in the path, the channel in `apns-channel-id`, no topic (Apple's header
    /// table for `POST /4/broadcasts/apps/<bundle>` has none).
    private func broadcastHeaders(
        _ kind: PushKind, _ target: PushTarget, _ authorization: String?, _ authority: String, _ now: UnixTime
    ) -> HPACKHeaders {
        var headers: HPACKHeaders = [
            ":method": "POST", ":scheme": "https", ":path": "/4/broadcasts/apps/" + target.topic,
            ":authority": authority, "apns-channel-id": target.token,
        ]
        if let authorization { headers.add(name: "authorization", value: authorization) }
        if let pushType = kind.push_type { headers.add(name: "apns-push-type", value: pushType) }
        if let priority = kind.priority { headers.add(name: "apns-priority", value: String(priority)) }
        if let expiration = kind.expiration_seconds {
            headers.add(name: "apns-expiration", value: expiration == 0 ? "0" : String(now.seconds + Int64(expiration)))
        }
        return headers
    }

    static func body(for kind: PushKind) -> [UInt8] {
        let aps: String
        switch kind.payload {
        case .alert: aps = #"{"alert":{"title":"Pushgate bench","body":"A message from the load generator"}}"#
        case .silent: aps = #"{"content-available":1}"#
        case .badge: aps = #"{"badge":1}"#
        case .sound: aps = #"{"sound":"default"}"#
        case .contentChanged: aps = #"{"content-changed":true}"#
        // Built per request (`body(_:target:now:sequence:)`).
        case .liveActivityUpdate, .liveActivityStart, .broadcast: aps = "{}"
        }
        var json = #"{"aps":"# + aps + "}"
        if let wanted = kind.payload_bytes {
            let padding = wanted - json.utf8.count - #","pad":"""#.utf8.count
            if padding > 0 {
                json.removeLast()
                json += #","pad":""# + String(repeating: "x", count: padding) + #""}"#
            }
        }
        return Array(json.utf8)
    }
}
