import PushModel

/// What happened to each push and which rule decided it, kept for the most recent `capacity` pushes so
/// a lookup by apns-id can show its journey (accepted, held, released, completed …).
public struct DecisionLog: Sendable {
    public struct Entry: Sendable, Equatable, Codable {
        public var at: UnixTime
        public var event: String
        public var rule: Rule?
    }

    private var journeys: [APNsID: [Entry]] = [:]
    private var order: [APNsID] = []
    private var head = 0
    public let capacity: Int

    public init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    public func journey(of id: APNsID) -> [Entry] { journeys[id] ?? [] }

    mutating func record(_ id: APNsID, _ event: String, rule: Rule?, at now: UnixTime) {
        guard capacity > 0 else { return }
        if journeys[id] == nil {
            if order.count < capacity {
                order.append(id)
            } else {
                journeys.removeValue(forKey: order[head])
                order[head] = id
                head = (head + 1) % capacity
            }
            journeys[id] = []
        }
        journeys[id]!.append(Entry(at: now, event: event, rule: rule))
    }

    mutating func record(_ action: PolicyAction, at now: UnixTime) {
        switch action {
        case .deliver(let push, let rule, let wake): record(push.id, wake ? "woken" : "delivered", rule: rule, at: now)
        case .hold(let id, let rule): record(id, "held", rule: rule, at: now)
        case .discard(let id, let rule): record(id, "discarded", rule: rule, at: now)
        case .completed(let id, let result): record(id, "completed \(result.rawValue)", rule: nil, at: now)
        case .completedLate(let id, let result): record(id, "completed late \(result.rawValue)", rule: nil, at: now)
        case .deadlineMissed(let id): record(id, "deadline missed", rule: nil, at: now)
        }
    }
}
