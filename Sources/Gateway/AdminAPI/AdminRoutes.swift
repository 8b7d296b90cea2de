import ConnectionLimits
import DeviceHub
import Foundation
import PushModel
import PushPolicy
import PushStore

/// The admin API's answers, apart from HTTP: a path in, a status and a JSON body out.
/// `AdminServer` serves them on the admin port; `pushgate lookup` reads them.
public struct AdminRoutes: Sendable {
    let hub: DeviceHub
    /// What `/ready` checks, by name: true when that part is ready.
    let readiness: @Sendable () -> [String: Bool]

    let storeFigures: @Sendable () -> CommitFigures?
    let providerConnections: @Sendable () -> Int
    /// The listeners' doors (connection caps, handshake timeouts), for `/v1/counters` and `/metrics`.
    let gates: @Sendable () -> [ConnectionGate]
    let metrics: GatewayMetrics?
    /// Figures from outside the gateway (a fleet in the same process): `/v1/fleet`, and more `/metrics`.
    let attached: AttachedFigures

    public init(
        hub: DeviceHub, readiness: @escaping @Sendable () -> [String: Bool] = { [:] },
        storeFigures: @escaping @Sendable () -> CommitFigures? = { nil },
        providerConnections: @escaping @Sendable () -> Int = { 0 },
        gates: @escaping @Sendable () -> [ConnectionGate] = { [] }, metrics: GatewayMetrics? = nil,
        attached: AttachedFigures = AttachedFigures()
    ) {
        self.attached = attached
        self.hub = hub
        self.gates = gates
        self.providerConnections = providerConnections
        self.storeFigures = storeFigures
        self.readiness = readiness
        self.metrics = metrics
    }

    public struct Response: Sendable, Equatable {
        public var status: Int
        /// The body: JSON, or the Prometheus text for `/metrics`.
        public var json: String
        public var contentType = "application/json"
        /// On 405: the methods the path takes (RFC 9110 §15.5.6).
        public var allow: String?
    }

    public func respond(method: String, path: String) async -> Response {
        let parts = path.split(separator: "?", maxSplits: 1)[0].split(separator: "/").map(String.init)
        let resource = parts.count == 3 && parts[0] == "v1" ? parts[1] : nil
        if method == "DELETE", resource == "devices" {
            // `pushgate devices remove`: its tokens answer 410 from now on, and it cannot connect again.
            let id = parts[2]
            guard hub.registry.slot(ofDevice: id) != nil else { return error(404, "no device \(id)") }
            guard hub.remove(deviceID: id) else { return error(409, "device \(id) was removed already") }
            return encode(["removed": id])
        }
        guard method == "GET" else {
            let allow = resource == "devices" ? "GET, DELETE" : "GET"
            return Response(status: 405, json: #"{"error":"only \#(allow) here"}"#, allow: allow)
        }
        if parts == ["openapi.json"] {
            return Response(status: 200, json: AdminOpenAPI.document)
        } else if parts == ["health"] {
            // Alive: the process answers.
            return Response(status: 200, json: #"{"status":"ok"}"#)
        } else if parts == ["ready"] {
            // Ready for traffic: every listener bound and not draining (orchestrators stop routing on 503).
            let checks = readiness()
            let ready = checks.values.allSatisfy { $0 }
            return Response(
                status: ready ? 200 : 503,
                json: encode(
                    Readiness(
                        status: ready ? "ready" : "not ready", checks: checks,
                        pid: ProcessInfo.processInfo.processIdentifier)
                ).json)
        } else if resource == "notifications" {
            let id = parts[2]
            guard let asked = APNsID(header: id) else {
                return error(400, "not an apns-id or apns-unique-id: \(id)")
            }
            // The id is an apns-id, or the apns-unique-id of one (derived from it: `APNsID.uniqueID`).
            for apnsID in [asked, APNsID(uniqueID: asked)] {
                let journey = hub.journey(of: apnsID)
                // The store keeps where it stands for the retention time, after the decision log forgot it.
                let stored = try? await hub.writer?.backend.notification(apnsID)
                if !journey.isEmpty || stored != nil {
                    return encode(NotificationJourney(apnsID: apnsID, stored: stored, journey: journey))
                }
            }
            return error(404, "nothing known of \(id): not in the store, and no decision in the log")
        } else if resource == "devices" {
            let id = parts[2]
            guard let slot = hub.registry.slot(ofDevice: id) else { return error(404, "no device \(id)") }
            return encode(hub.deviceState(slot, id: id))
        } else if resource == "tokens" {
            let text = parts[2]
            guard let token = DeviceToken(text, lengths: 2...1024) else {
                return error(400, "not a device token: \(text)")
            }
            guard let found = hub.registry.lookup(token) else { return error(404, "no device has token \(token.hex)") }
            let bundle = found.status.bundleID
            var status = "active"
            if case .unregistered(_, let since) = found.status { status = "unregistered since \(since.milliseconds)" }
            let budget = hub.budget(device: found.slot, bundleID: bundle)
            return encode(
                TokenState(
                    token: token.hex, deviceID: found.deviceID, bundleID: bundle, status: status,
                    connected: hub.isConnected(found.slot), owner: hub.registry.owner(of: found.slot),
                    budget: budget.map(BudgetState.init)))
        } else if parts == ["metrics"], let metrics {
            let gateway = metrics.scrape(hub: hub, store: storeFigures() ?? CommitFigures(), gates: gates())
            return Response(
                status: 200, json: gateway + (attached.current?.metrics() ?? ""),
                contentType: "text/plain; version=0.0.4; charset=utf-8")
        } else if parts == ["v1", "fleet"] {
            guard let source = attached.current else {
                return error(404, "no simulated fleet runs in this gateway's process (pushgate demo attaches one)")
            }
            return Response(status: 200, json: source.json())
        } else if parts == ["v1", "broadcasts"] {
            return encode(["broadcasts": hub.broadcastFigures.recent])
        } else if parts == ["v1", "counters"] {
            return encode(
                Counters(
                    policy: hub.policyCounters, hub: hub.counters, connectedDevices: hub.connectedCount,
                    providerConnections: providerConnections(),
                    connections: Dictionary(uniqueKeysWithValues: gates().map { ($0.name, $0.figures) }),
                    acceptToDeviceAckMicroseconds: hub.deliveryLatency,
                    acceptToDeviceAckBuckets: hub.deliveryLatencyBuckets, store: storeFigures(),
                    linkedNodes: hub.linkedNodes.isEmpty ? nil : hub.linkedNodes))
        }
        return error(404, "no such admin path: \(path)")
    }

    private func error(_ status: Int, _ message: String) -> Response {
        Response(status: status, json: encode(AdminError(error: message)).json)
    }

    private func encode<T: Encodable>(_ value: T) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return Response(status: 200, json: String(decoding: data, as: UTF8.self))
    }
}
