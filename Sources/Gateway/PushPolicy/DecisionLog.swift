import PushModel

/// What happened to each push and which rule decided it, kept for the most recent `capacity` pushes so
/// a lookup by apns-id can show its journey (accepted, held, released, completed …).
public struct DecisionLog: Sendable {
    public struct Entry: Sendable, Equatable {
        public var at: UnixTime
        public var event: Event
        public var rule: Rule?
    }

    /// What happened to a push.
    public enum Event: Sendable, Equatable, CustomStringConvertible {
        case accepted(NotificationClass)
        /// Its push type does not match its payload: accepted all the same (APNs may delay or drop it).
        case pushTypeMismatch(PushTypeMismatch)
        case delivered
        case woken
        case held
        case discarded
        /// Written to the device again (its `n`th time): the connection it was written to ended before
        /// the device acknowledged it.
        case sentAgain(Int)
        /// The device acknowledged the delivery: delivered.
        case acknowledged
        case completed(CompletionResult)
        case completedLate(CompletionResult)
        case deadlineMissed
        /// The device did not wake the app for it: no deadline, no penalty.
        case notWoken(WakeRefusal)
        /// The store did not write it: its provider was answered with an error (500, or 503 when it waited
        /// past the store's wait limit), and it is never delivered.
        case notStored

        public var description: String {
            switch self {
            case .accepted(let kind): return "accepted \(kind.rawValue)"
            case .pushTypeMismatch(let mismatch): return "push type mismatch: \(mismatch.description)"
            case .delivered: return "delivered"
            case .woken: return "woken"
            case .held: return "held"
            case .discarded: return "discarded"
            case .sentAgain(let times): return "sent again (\(times) times in all)"
            case .acknowledged: return "acknowledged by the device"
            case .completed(let result): return "completed \(result.rawValue)"
            case .completedLate(let result): return "completed late \(result.rawValue)"
            case .deadlineMissed: return "deadline missed"
            case .notWoken(let reason): return "not woken: \(reason.rawValue)"
            case .notStored: return "not stored: answered 500 or 503, never delivered"
            }
        }
    }

    private var journeys: [APNsID: [Entry]] = [:]
    private var order: [APNsID] = []
    private var head = 0
    public let capacity: Int

    public init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    public func journey(of id: APNsID) -> [Entry] { journeys[id] ?? [] }

    /// Records an event for a push the log has seen (a later one is not started by it).
    mutating func recordIfKnown(_ id: APNsID, _ event: Event, at now: UnixTime) {
        guard journeys[id] != nil else { return }
        journeys[id]!.append(Entry(at: now, event: event, rule: nil))
    }

    mutating func record(_ id: APNsID, _ event: Event, rule: Rule?, at now: UnixTime) {
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
        case .deliver(let push, let rule, let wake): record(push.id, wake ? .woken : .delivered, rule: rule, at: now)
        case .hold(let id, let rule): record(id, .held, rule: rule, at: now)
        case .discard(let id, let rule): record(id, .discarded, rule: rule, at: now)
        case .completed(let id, let result): record(id, .completed(result), rule: nil, at: now)
        case .completedLate(let id, let result): record(id, .completedLate(result), rule: nil, at: now)
        case .deadlineMissed(let id): record(id, .deadlineMissed, rule: nil, at: now)
        case .notWoken(let id, let reason): record(id, .notWoken(reason), rule: nil, at: now)
        }
    }
}
