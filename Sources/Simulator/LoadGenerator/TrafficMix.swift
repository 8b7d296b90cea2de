import NIOCore
import NIOHPACK
import PushModel

/// A device token and the topic to push to it with (a simulator's tokens file has one per line:
/// `token bundle_id`).
public struct PushTarget: Sendable, Equatable {
    public var token: String
    public var topic: String

    public init(token: String, topic: String) {
        self.token = token
        self.topic = topic
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
            targets.append(PushTarget(token: String(first), topic: topic))
        }
        guard !targets.isEmpty else { throw ScenarioError("tokens: the file has no tokens") }
        return targets
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

    public func body(_ kind: Int) -> ByteBuffer { bodies[kind] }

    /// The request's headers, as an APNs client sends them (`:scheme https` even over h2c).
    public func headers(
        kind index: Int, target: PushTarget, authorization: String?, authority: String, now: UnixTime,
        random: inout FastRandom
    ) -> HPACKHeaders {
        let kind = kinds[index]
        var headers: HPACKHeaders = [
            ":method": "POST", ":scheme": "https", ":path": "/3/device/" + target.token, ":authority": authority,
            "apns-topic": target.topic,
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

    static func body(for kind: PushKind) -> [UInt8] {
        let aps: String
        switch kind.payload {
        case .alert: aps = #"{"alert":{"title":"Pushgate bench","body":"A message from the load generator"}}"#
        case .silent: aps = #"{"content-available":1}"#
        case .badge: aps = #"{"badge":1}"#
        case .sound: aps = #"{"sound":"default"}"#
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
