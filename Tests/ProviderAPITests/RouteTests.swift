import Foundation
import GatewayFiles
import Logging
import NIOCore
import NIOPosix
import NodeLinks
import ProviderAuth
import ProviderClient
import PushIntake
import PushModel
import Synchronization
import Testing
import TestSupport

@testable import ProviderAPI

/// Records the routed pushes the provider API hands on; leaves out those of `unknownDevice`.
final class RecordingRoutes: RouteIntake {
    static let unknownDevice = "unknown-device"
    let received = Mutex<[(node: String, push: RoutedPush)]>([])

    func routed(_ pushes: [RoutedPush], from node: String) -> [APNsID] {
        var untaken: [APNsID] = []
        for push in pushes {
            if push.deviceID == Self.unknownDevice {
                untaken.append(push.notification.id)
            } else {
                received.withLock { $0.append((node, push)) }
            }
        }
        return untaken
    }

    var ids: [APNsID] { received.withLock { $0.map(\.push.notification.id) } }
}

/// The node links over a real provider API on loopback: routed pushes in batches, the fleet's token,
/// and every push settled exactly once — taken by the owner, or handed back to its `orElse`.
@Suite struct RouteTests {
    static let secret = "0123456789abcdef0123456789abcdef"

    static func push(_ n: Int, device: String = "device-1", payloadSize: Int = 0) -> RoutedPush {
        let payload =
            Array(#"{"aps":{"alert":"hello \#(n)"},"pad":""#.utf8)
            + Array(repeating: UInt8(ascii: "x"), count: payloadSize)
            + Array(#""}"#.utf8)
        let id = APNsID(header: String(format: "00000000-0000-4000-8000-%012d", n))!
        return RoutedPush(
            notification: PushNotification(
                id: id, deviceToken: Fixture.token, topic: Topic(Fixture.bundle)!, bundleID: Fixture.bundle,
                pushType: .alert, priority: .immediate, expiration: .at(unixSeconds: 1_800_000_600),
                collapseID: n % 2 == 0 ? CollapseID(header: "c\(n)") : nil, notificationClass: .alerting,
                mismatch: n % 3 == 0 ? .noAPS : nil, payload: payload, teamID: n % 2 == 0 ? Fixture.team : nil,
                receivedAt: UnixTime(milliseconds: 1_800_000_000_000 + Int64(n))),
            deviceID: device, expiresAt: n % 2 == 0 ? UnixTime(milliseconds: 1_800_000_600_000) : nil)
    }

    @Test func aBatchReadsBackAsItWasWritten() throws {
        let pushes = (0..<7).map { Self.push($0, payloadSize: $0 * 100) }
        #expect(try RouteBatch.decode(RouteBatch.encode(pushes)) == pushes)
        #expect(try RouteBatch.decode(RouteBatch.encode([])) == [])
    }

    @Test func bytesThatAreNoBatchAreNamed() {
        var buffer = RouteBatch.encode([Self.push(1)])
        buffer.moveWriterIndex(to: buffer.writerIndex - 3)
        #expect(throws: RouteBatchError.self) { try RouteBatch.decode(buffer) }
        #expect(
            performing: { try RouteBatch.decode(ByteBuffer(string: "GET / HTTP/1.1")) },
            throws: {
                ($0 as? RouteBatchError)?.description == "no route batch (PGR1)"
            })
        var trailing = RouteBatch.encode([Self.push(1)])
        trailing.writeString("x")
        #expect(
            performing: { try RouteBatch.decode(trailing) },
            throws: {
                ($0 as? RouteBatchError)?.description == "1 bytes after the last push"
            })
    }

    @Test func aTokenNamesItsNodeOnlyWithTheFleetsSecretAndInTime() {
        let tokens = NodeTokens(secret: Self.secret)
        let now = UnixTime(seconds: 1_800_000_000)
        let token = "bearer " + tokens.token(node: "node-a", now: now)
        #expect(tokens.node(authorization: token, now: now) == "node-a")
        #expect(tokens.node(authorization: token, now: now.adding(seconds: NodeTokens.lifetimeSeconds)) == "node-a")
        #expect(tokens.node(authorization: token, now: now.adding(seconds: NodeTokens.lifetimeSeconds + 1)) == nil)
        #expect(NodeTokens(secret: "another fleet").node(authorization: token, now: now) == nil)
        #expect(tokens.node(authorization: token.replacingOccurrences(of: "node-a", with: "node-b"), now: now) == nil)
        #expect(tokens.node(authorization: nil, now: now) == nil)
        #expect(tokens.node(authorization: "bearer nothing", now: now) == nil)
    }

    @Test func addressesReadAsURLs() {
        #expect(NodeAddress(url: "http://10.0.0.2:2198") == NodeAddress(host: "10.0.0.2", port: 2198, tls: false))
        #expect(NodeAddress(url: "https://[::1]:2197/") == NodeAddress(host: "::1", port: 2197, tls: true))
        #expect(NodeAddress(url: "https://[::1]:2197")?.description == "https://[::1]:2197")
        for bad in ["10.0.0.2:2198", "http://host", "http://:80", "http://host:0", "ftp://host:21", "http://h/x:80"] {
            #expect(NodeAddress(url: bad) == nil, "\(bad)")
        }
    }

    /// Links from "node-a" to the gateway as "node-b", with `routes` taking what arrives there.
    static func links(
        to gateway: TestGateway, over transport: TestGateway.Transport, tokens: NodeTokens,
        group: (any EventLoopGroup)? = nil
    ) -> NodeLinks {
        var settings = NodeLinkSettings()
        settings.trustRoots = [gateway.certificates.caCertificatePath]
        let links = NodeLinks(
            nodeID: "node-a", tokens: tokens, group: group ?? gateway.group, settings: settings,
            logger: Logger(label: "test"),
            clock: { gateway.clock.now })
        let address =
            transport == .h2c
            ? NodeAddress(host: "127.0.0.1", port: gateway.h2cPort, tls: false)
            : NodeAddress(host: "127.0.0.1", port: gateway.tlsPort, tls: true)
        links.update(addresses: ["node-a": "http://127.0.0.1:1", "node-b": address.description])
        return links
    }

    @Test(arguments: TestGateway.Transport.allCases)
    func pushesReachTheOwnerInOrderAndThoseItDidNotTakeComeBack(transport: TestGateway.Transport) async throws {
        try await TestGateway.with { gateway in
            let tokens = NodeTokens(secret: Self.secret)
            let routes = RecordingRoutes()
            gateway.server.context.takeRoutes(routes, tokens: tokens)
            let links = Self.links(to: gateway, over: transport, tokens: tokens)
            defer { links.close() }
            #expect(links.linkedNodes == ["node-b"])
            let returned = Mutex<[APNsID]>([])
            // 300 pushes of 4 KB: more than one batch's bytes.
            let pushes = (0..<300).map {
                Self.push($0, device: $0 % 50 == 7 ? RecordingRoutes.unknownDevice : "device-1", payloadSize: 4000)
            }
            for push in pushes {
                links.forward(push, to: "node-b") { returned.withLock { $0.append(push.notification.id) } }
            }
            try await eventually("every push settled") {
                routes.ids.count + returned.withLock { $0.count } == pushes.count
            }
            let unknown = pushes.filter { $0.deviceID == RecordingRoutes.unknownDevice }.map(\.notification.id)
            #expect(returned.withLock { $0 } == unknown)
            #expect(routes.ids == pushes.filter { $0.deviceID != RecordingRoutes.unknownDevice }.map(\.notification.id))
            #expect(routes.received.withLock { $0.allSatisfy { $0.node == "node-a" } })
            #expect(routes.received.withLock { $0.first?.push } == pushes[0])
        }
    }

    @Test func aLinkWithAnotherFleetsTokenIsRefusedAndItsPushesComeBack() async throws {
        try await TestGateway.with { gateway in
            let routes = RecordingRoutes()
            gateway.server.context.takeRoutes(routes, tokens: NodeTokens(secret: Self.secret))
            let links = Self.links(to: gateway, over: .h2c, tokens: NodeTokens(secret: "another fleet's"))
            defer { links.close() }
            let returned = Atomic(0)
            for n in 0..<5 { links.forward(Self.push(n), to: "node-b") { returned.add(1, ordering: .relaxed) } }
            try await eventually("every push came back") { returned.load(ordering: .relaxed) == 5 }
            #expect(routes.ids.isEmpty)
            // No link to a node the database gave no address for.
            links.forward(Self.push(9), to: "node-c") { returned.add(1, ordering: .relaxed) }
            #expect(returned.load(ordering: .relaxed) == 6)
        }
    }

    @Test func aRequestThatIsNoBatchIsAnswered400AndANodeWithoutRoutes404() async throws {
        try await TestGateway.with { gateway in
            let tokens = NodeTokens(secret: Self.secret)
            let client = try await gateway.client()
            defer { Task { await client.close() } }
            let authorization = "bearer " + tokens.token(node: "node-a", now: gateway.clock.now)
            let before = try await client.post(
                path: RouteBatch.path, headers: [("authorization", authorization)], body: Array("hello".utf8))
            #expect(before.status == 404)
            gateway.server.context.takeRoutes(RecordingRoutes(), tokens: tokens)
            let garbage = try await client.post(
                path: RouteBatch.path, headers: [("authorization", authorization)], body: Array("hello".utf8))
            #expect(garbage.status == 400)
            #expect(garbage.bodyText == "no route batch (PGR1)")
            let unsigned = try await client.post(
                path: RouteBatch.path, headers: [], body: Array(RouteBatch.encode([Self.push(1)]).readableBytesView))
            #expect(unsigned.status == 403)
        }
    }

    /// The connection goes mid-stream (the owner stops): each push is taken by the owner or handed back,
    /// never both, never neither.
    @Test func aLinkCutMidStreamSettlesEveryPushExactlyOnce() async throws {
        let gateway = try await TestGateway.start()
        let tokens = NodeTokens(secret: Self.secret)
        let routes = RecordingRoutes()
        gateway.server.context.takeRoutes(routes, tokens: tokens)
        // The links' own event loops: the gateway's stop with them.
        let links = Self.links(to: gateway, over: .h2c, tokens: tokens, group: MultiThreadedEventLoopGroup.singleton)
        defer { links.close() }
        let returned = Mutex<[APNsID]>([])
        let pushes = (0..<3000).map { Self.push($0, payloadSize: 200) }
        for (index, push) in pushes.enumerated() {
            links.forward(push, to: "node-b") { returned.withLock { $0.append(push.notification.id) } }
            if index == 1000 {
                try await eventually("the first pushes arrived") { !routes.ids.isEmpty }
                try await gateway.stop()
            }
        }
        try await eventually("every push settled") {
            routes.ids.count + returned.withLock { $0.count } >= pushes.count
        }
        let taken = Set(routes.ids)
        let back = Set(returned.withLock { $0 })
        #expect(taken.count == routes.ids.count, "a push taken twice")
        #expect(back.count == returned.withLock { $0.count }, "a push handed back twice")
        #expect(taken.isDisjoint(with: back))
        #expect(taken.union(back) == Set(pushes.map(\.notification.id)))
        #expect(!back.isEmpty)
    }
}
