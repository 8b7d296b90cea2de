import ConnectionLimits
import Foundation
import DeviceHub
import PushModel
import PushPolicy
import PushStore

// The admin API's documents, as the server writes them and its clients (the CLI's lookup, fleet status)
// read them: one type per document, so a field's name is written once.

public struct NotificationJourney: Codable, Sendable {
    public struct Step: Codable, Sendable {
        public var at: Int64
        public var event: String
        public var rule: String?
        /// Apple's name for where the push stood after this step (Push Notifications Console).
        public var state: String
    }

    /// Where it stands now, in Apple's words ("Delivered (From Storage)", "Stored – Device Offline", …),
    /// with the policy's rule as the detail.
    public var deliveryState: String

    /// The store's record: what was accepted and where it stands.
    public struct Stored: Codable, Sendable {
        public var state: String
        public var rule: String?
        public var deviceID: String?
        public var topic: String
        public var pushType: String
        public var priority: Int
        public var collapseID: String?
        public var receivedAt: Int64
        public var expiresAt: Int64?

        init(_ stored: StoredNotification) {
            let push = stored.notification
            state = Self.names[stored.state]!
            rule = stored.rule?.rawValue
            deviceID = stored.deviceID
            topic = push.topic.value
            pushType = push.pushType.rawValue
            priority = push.priority.rawValue
            collapseID = push.collapseID?.value
            receivedAt = push.receivedAt.milliseconds
            expiresAt = stored.expiresAt?.milliseconds
        }

        static let names: [NotificationState: String] = [
            .pending: "pending", .delivered: "delivered", .discarded: "discarded", .noDevice: "no_device",
        ]
    }

    public var apnsID: String
    /// The `apns-unique-id` a development gateway answered the push with.
    public var uniqueID: String
    public var stored: Stored?
    public var steps: [Step]

    /// The store's record and the decision log's steps, each step with Apple's state after it.
    init(apnsID: APNsID, stored: StoredNotification?, journey: [DecisionLog.Entry]) {
        self.apnsID = apnsID.value
        uniqueID = apnsID.uniqueID.value
        self.stored = stored.map(Stored.init)
        var lastRule: Rule?
        var state = DeliveryState.received
        steps = journey.map { entry in
            switch entry.event {
            case .accepted: state = .received
            case .acknowledged: state = DeliveryState(rule: lastRule, acknowledged: true, discarded: false)
            case .delivered, .woken, .held, .discarded:
                lastRule = entry.rule ?? lastRule
                state = DeliveryState(rule: lastRule, acknowledged: false, discarded: entry.event == .discarded)
            case .pushTypeMismatch, .sentAgain, .completed, .completedLate, .deadlineMissed, .notWoken, .notStored:
                break
            }
            return Step(
                at: entry.at.milliseconds, event: entry.event.description, rule: entry.rule?.rawValue,
                state: state.rawValue)
        }
        if let stored {
            let current =
                stored.state == .noDevice
                ? DeliveryState.received
                : DeliveryState(
                    rule: stored.rule, acknowledged: stored.state == .delivered, discarded: stored.state == .discarded)
            deliveryState = current.rawValue
        } else {
            deliveryState = state.rawValue
        }
    }
}

public struct TokenState: Codable, Sendable {
    public var token: String
    public var deviceID: String
    public var bundleID: String
    public var status: String
    public var connected: Bool
    /// With several nodes: the node that runs the device's policy (its budget is shown there).
    public var owner: String?
    public var budget: BudgetState?
}

/// A device as `/v1/devices/<id>` shows it: connection, conditions, owner node, and each app's token
/// and silent budget (held pushes, strikes, cooling).
public struct DeviceState: Codable, Sendable {
    public struct App: Codable, Sendable {
        public var bundleID: String
        public var token: String
        public var budget: BudgetState?
    }

    public var deviceID: String
    public var connected: Bool
    public var lowPowerMode: Bool
    public var backgroundAppRefreshOff: Bool
    public var owner: String?
    public var apps: [App]
}

extension DeviceHub {
    func deviceState(_ slot: DeviceSlot, id: String) -> DeviceState {
        let conditions = conditions(of: slot)
        return DeviceState(
            deviceID: id, connected: isConnected(slot), lowPowerMode: conditions.lowPowerMode,
            backgroundAppRefreshOff: conditions.backgroundAppRefreshOff, owner: registry.owner(of: slot),
            apps: registry.apps(of: slot).map { app in
                DeviceState.App(
                    bundleID: app.bundleID, token: app.token.hex,
                    budget: budget(device: slot, bundleID: app.bundleID).map(BudgetState.init))
            })
    }
}

public struct BudgetState: Codable, Sendable {
    public var budgetLeft: Int
    public var budgetCapacity: Int
    public var nextRefillAt: Int64?
    public var held: [String]
    public var strikes: Double
    public var coolingUntil: Int64?
    public var awaitingCompletion: [String]
    public var appState: String
    /// The app's Live Activities have the larger budget (`frequentPushesEnabled`).
    public var frequentPushes: Bool

    init(_ snapshot: AppThrottleSnapshot) {
        budgetLeft = snapshot.budgetLeft
        budgetCapacity = snapshot.budgetCapacity
        nextRefillAt = snapshot.nextRefill?.milliseconds
        held = snapshot.held.map { "\($0.id.value) (\($0.rule.rawValue))" }
        strikes = (snapshot.strikes * 1000).rounded() / 1000
        coolingUntil = snapshot.coolingUntil?.milliseconds
        awaitingCompletion = snapshot.awaitingCompletion.map(\.value)
        appState = snapshot.appState.rawValue
        frequentPushes = snapshot.frequentPushes
    }
}

/// `/ready`: ready or not, each check, and the process that answers (so that whoever waits for a gateway
/// it started knows the answer is that gateway's, not another process's on the same port).
public struct Readiness: Codable, Sendable {
    public var status: String
    public var checks: [String: Bool]
    public var pid: Int32
}

/// `/v1/counters`: the policy's and the hub's counters, the doors, the delivery latency, the store's
/// commits. The CLI (`fleet status`) reads it as the server writes it.
public struct Counters: Codable, Sendable {
    public var policy: PolicyCounters
    public var hub: HubCounters
    public var connectedDevices: Int
    /// Provider API connections open now.
    public var providerConnections: Int
    /// Each listener kind's door: open connections, refusals by cap, handshake timeouts.
    public var connections: [String: ConnectionGate.Figures]
    public var acceptToDeviceAckMicroseconds: DeliveryLatency
    public var acceptToDeviceAckBuckets: [[UInt64]]
    /// The store writer's commits (absent without a store).
    public var store: CommitFigures?
    /// Several nodes: the nodes this one has a link to for routed pushes (docs/store.md, "The node links").
    public var linkedNodes: [String]?

    /// Pushes accepted (every class), as `fleet status` adds them up.
    public var accepted: Int { policy.acceptedTotal }
    /// Pushes the devices acknowledged.
    public var delivered: Int { hub.delivered }
    /// The device door's connection cap (0 when it has none).
    public var deviceConnectionLimit: Int { connections["devices"]?.limit ?? 0 }
}

/// Any refusal: `{"error": "…"}` with the status that says what kind.
public struct AdminError: Codable, Sendable {
    public var error: String

    public init(error: String) { self.error = error }

    /// The message of an answer's body, when it is a refusal.
    public static func message(in body: String) -> String? {
        try? JSONDecoder().decode(AdminError.self, from: Data(body.utf8)).error
    }
}
