import Foundation
import PushModel

/// One kind of notification in a traffic mix, with its share of the requests.
public struct PushKind: Codable, Sendable, Equatable {
    /// Shown in reports.
    public var name: String
    /// Relative share of the requests (weights need not add up to anything).
    public var weight: Double
    /// `apns-push-type` (absent: the server infers it).
    public var push_type: String?
    /// The `aps` content: `alert`, `silent` (`content-available: 1`), `badge` or `sound`; or an ActivityKit
    /// push — `live_activity_update` to a started activity's update token, `live_activity_start` to a
    /// push-to-start token (the tokens file's `update:`/`start:` lines), with the send time as `timestamp`;
    /// or `broadcast`, an update POSTed to a channel (`/4/broadcasts/apps/<bundle>`, `bench --channels`).
    public var payload: Payload
    /// `apns-priority` (absent: the header is not sent).
    public var priority: Int?
    /// Draw `apns-collapse-id` from this many distinct values (0 or absent: none).
    public var collapse_ids: Int?
    /// `apns-expiration`: 0 (one attempt, never stored) or seconds from the send time (absent: not sent).
    public var expiration_seconds: Int?
    /// Pad the JSON payload to about this many bytes with a custom key (absent: the bare payload).
    public var payload_bytes: Int?

    public enum Payload: String, Codable, Sendable, CaseIterable {
        case alert, silent, badge, sound
        /// `{"aps":{"content-changed":true}}`: a widget reload (`push_type: widgets`) or a control refresh
        /// (`push_type: controls`), to the app's own token, its topic with the push type's suffix.
        case contentChanged = "content_changed"
        case liveActivityUpdate = "live_activity_update"
        case liveActivityStart = "live_activity_start"
        case broadcast

        /// The Live Activity tokens it goes to (`start:` or `update:` in the tokens file, `channel` for the
        /// broadcast channels); nil: an app's own.
        public var activityTokenPrefix: String? {
            switch self {
            case .liveActivityUpdate: "update:"
            case .liveActivityStart: "start:"
            case .broadcast: PushTarget.channelMark
            default: nil
            }
        }
    }

    public init(
        name: String, weight: Double, push_type: String?, payload: Payload, priority: Int?,
        collapse_ids: Int? = nil, expiration_seconds: Int? = nil, payload_bytes: Int? = nil
    ) {
        self.name = name
        self.weight = weight
        self.push_type = push_type
        self.payload = payload
        self.priority = priority
        self.collapse_ids = collapse_ids
        self.expiration_seconds = expiration_seconds
        self.payload_bytes = payload_bytes
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, weight, push_type, payload, priority, collapse_ids, expiration_seconds, payload_bytes
    }

    public init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, known: CodingKeys.self)
        let values = try decoder.container(keyedBy: CodingKeys.self)
        name = try values.decode(String.self, forKey: .name)
        weight = try values.decodeIfPresent(Double.self, forKey: .weight) ?? 1
        push_type = try values.decodeIfPresent(String.self, forKey: .push_type)
        payload = try values.decode(Payload.self, forKey: .payload)
        priority = try values.decodeIfPresent(Int.self, forKey: .priority)
        collapse_ids = try values.decodeIfPresent(Int.self, forKey: .collapse_ids)
        expiration_seconds = try values.decodeIfPresent(Int.self, forKey: .expiration_seconds)
        payload_bytes = try values.decodeIfPresent(Int.self, forKey: .payload_bytes)
    }

    /// Whether Pushgate classifies it as silent (content-available alone).
    public var isSilent: Bool { payload == .silent }

    /// The kinds `--mix name=weight,…` can name.
    public static let builtIn: [PushKind] = [
        PushKind(name: "alert", weight: 1, push_type: "alert", payload: .alert, priority: 10),
        PushKind(name: "alert-deferrable", weight: 1, push_type: "alert", payload: .alert, priority: 5),
        PushKind(name: "badge", weight: 1, push_type: "alert", payload: .badge, priority: 10),
        PushKind(name: "silent", weight: 1, push_type: "background", payload: .silent, priority: 5),
        PushKind(
            name: "silent-collapsing", weight: 1, push_type: "background", payload: .silent, priority: 5,
            collapse_ids: 4),
        PushKind(
            name: "silent-expiring", weight: 1, push_type: "background", payload: .silent, priority: 5,
            expiration_seconds: 60),
        PushKind(
            name: "silent-once", weight: 1, push_type: "background", payload: .silent, priority: 5,
            expiration_seconds: 0),
        PushKind(name: "low", weight: 1, push_type: "background", payload: .silent, priority: 1),
        PushKind(name: "live-update", weight: 1, push_type: "liveactivity", payload: .liveActivityUpdate, priority: 10),
        PushKind(
            name: "live-update-low", weight: 1, push_type: "liveactivity", payload: .liveActivityUpdate, priority: 5),
        PushKind(name: "live-start", weight: 1, push_type: "liveactivity", payload: .liveActivityStart, priority: 10),
        PushKind(name: "live-broadcast", weight: 1, push_type: "liveactivity", payload: .broadcast, priority: 10),
    ]

    /// What is wrong with the kind, naming the key; nil when it is valid.
    func problem(at path: String) -> String? {
        if name.isEmpty { return "\(path).name: must not be empty" }
        if !(weight >= 0) || !weight.isFinite { return "\(path).weight: must be a number ≥ 0, got \(weight)" }
        if let push_type, PushType(rawValue: push_type) == nil {
            return
                "\(path).push_type: not an apns-push-type: '\(push_type)' (known: \(PushType.allCases.map(\.rawValue).joined(separator: ", ")))"
        }
        if let priority, ![1, 5, 10].contains(priority) {
            return "\(path).priority: must be 1, 5 or 10, got \(priority)"
        }
        if payload.activityTokenPrefix != nil {
            if let push_type, push_type != PushType.liveactivity.rawValue {
                return "\(path).push_type: \(payload.rawValue) is an ActivityKit push: liveactivity, got '\(push_type)'"
            }
            if let priority, priority == 1, payload != .broadcast {
                return "\(path).priority: a Live Activity update is 5 or 10"
            }
            if payload == .broadcast, push_type == nil {
                return "\(path).push_type: a broadcast needs apns-push-type liveactivity"
            }
            if payload == .broadcast, collapse_ids ?? 0 > 0 {
                return "\(path).collapse_ids: a broadcast has no apns-collapse-id"
            }
        }
        if let collapse_ids, collapse_ids < 0 { return "\(path).collapse_ids: must be ≥ 0, got \(collapse_ids)" }
        if let expiration_seconds, expiration_seconds < 0 {
            return "\(path).expiration_seconds: must be ≥ 0, got \(expiration_seconds)"
        }
        if let payload_bytes, !(1...5120).contains(payload_bytes) {
            return "\(path).payload_bytes: must be between 1 and 5120, got \(payload_bytes)"
        }
        return nil
    }
}

/// A load test: its shape (rate or closed loop, duration or count, connections × streams) and its mix.
/// Read from a YAML file (Config/scenarios) and overridden by `pushgate bench`'s flags.
public struct Scenario: Codable, Sendable, Equatable {
    /// Open loop: requests per second (0 or absent: closed loop, as fast as `streams` allow).
    public var rate: Double?
    /// Ramp the rate linearly from `rate` to this over the run.
    public var ramp_to: Double?
    public var duration_seconds: Double?
    /// Stop after this many requests (absent: after `duration_seconds`).
    public var count: Int?
    public var connections: Int?
    /// Concurrent streams per connection (at most what the server allows).
    public var streams: Int?
    public var mix: [PushKind]

    public init(
        rate: Double? = nil, ramp_to: Double? = nil, duration_seconds: Double? = nil, count: Int? = nil,
        connections: Int? = nil, streams: Int? = nil, mix: [PushKind]
    ) {
        self.rate = rate
        self.ramp_to = ramp_to
        self.duration_seconds = duration_seconds
        self.count = count
        self.connections = connections
        self.streams = streams
        self.mix = mix
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case rate, ramp_to, duration_seconds, count, connections, streams, mix
    }

    public init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, known: CodingKeys.self)
        let values = try decoder.container(keyedBy: CodingKeys.self)
        rate = try values.decodeIfPresent(Double.self, forKey: .rate)
        ramp_to = try values.decodeIfPresent(Double.self, forKey: .ramp_to)
        duration_seconds = try values.decodeIfPresent(Double.self, forKey: .duration_seconds)
        count = try values.decodeIfPresent(Int.self, forKey: .count)
        connections = try values.decodeIfPresent(Int.self, forKey: .connections)
        streams = try values.decodeIfPresent(Int.self, forKey: .streams)
        mix = try values.decodeIfPresent([PushKind].self, forKey: .mix) ?? []
    }

    public var effectiveDuration: Double { duration_seconds ?? 30 }
    public var effectiveConnections: Int { connections ?? 4 }
    public var effectiveStreams: Int { streams ?? 100 }
    public var isOpenLoop: Bool { (rate ?? 0) > 0 }

    /// The open-loop schedule (nil: closed loop).
    public var schedule: RateSchedule? {
        guard let rate, rate > 0 else { return nil }
        // With a count too, the run stops at whichever comes first.
        return RateSchedule.ramp(from: rate, to: ramp_to ?? rate, seconds: effectiveDuration)
    }

    /// What is wrong with the scenario, naming the key; nil when it is valid.
    public func problem() -> String? {
        if let rate, !(rate >= 0) || !rate.isFinite { return "rate: must be a number ≥ 0, got \(rate)" }
        if let ramp_to {
            if !(ramp_to > 0) || !ramp_to.isFinite { return "ramp_to: must be a number > 0, got \(ramp_to)" }
            if (rate ?? 0) <= 0 { return "ramp_to: needs rate (the ramp's start) > 0" }
        }
        if let duration_seconds, !(duration_seconds > 0) {
            return "duration_seconds: must be > 0, got \(duration_seconds)"
        }
        if let count, count <= 0 { return "count: must be > 0, got \(count)" }
        if let connections, !(1...1000).contains(connections) {
            return "connections: must be between 1 and 1000, got \(connections)"
        }
        if let streams, !(1...10_000).contains(streams) {
            return "streams: must be between 1 and 10000, got \(streams)"
        }
        if mix.isEmpty { return "mix: needs at least one kind" }
        for (index, kind) in mix.enumerated() {
            if let problem = kind.problem(at: "mix[\(index)]") { return problem }
        }
        if mix.allSatisfy({ $0.weight == 0 }) { return "mix: every weight is 0" }
        return nil
    }

    /// The mix `--mix alert=30,silent=70` describes, from the built-in kinds.
    public static func mix(flag: String) throws(ScenarioError) -> [PushKind] {
        var kinds: [PushKind] = []
        for part in flag.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, let weight = Double(pair[1]), weight >= 0 else {
                throw ScenarioError("--mix: expected name=weight, got '\(part)'")
            }
            guard var kind = PushKind.builtIn.first(where: { $0.name == pair[0] }) else {
                throw ScenarioError(
                    "--mix: no kind named '\(pair[0])' (known: \(PushKind.builtIn.map(\.name).joined(separator: ", ")))"
                )
            }
            kind.weight = weight
            kinds.append(kind)
        }
        guard !kinds.isEmpty else { throw ScenarioError("--mix: empty") }
        return kinds
    }
}

public struct ScenarioError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension Scenario {
    /// The default scenario (Config/scenarios/realistic.yaml holds the same; a test keeps them equal):
    /// mostly silent refreshes and chat alerts, some collapsing syncs, deferrable promotions,
    /// expiring scores and badges.
    public static let realistic = Scenario(
        rate: 1000, duration_seconds: 30, connections: 4, streams: 100,
        mix: [
            PushKind(name: "chat message", weight: 30, push_type: "alert", payload: .alert, priority: 10),
            PushKind(name: "content refresh", weight: 45, push_type: "background", payload: .silent, priority: 5),
            PushKind(
                name: "inbox sync", weight: 10, push_type: "background", payload: .silent, priority: 5, collapse_ids: 1),
            PushKind(name: "promotion", weight: 5, push_type: "alert", payload: .alert, priority: 5),
            PushKind(
                name: "live score", weight: 5, push_type: "background", payload: .silent, priority: 5,
                expiration_seconds: 60),
            PushKind(name: "badge", weight: 5, push_type: "alert", payload: .badge, priority: 10),
        ])
}
