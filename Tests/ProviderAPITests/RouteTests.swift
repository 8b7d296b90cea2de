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

/// Records the routed pushes the provider API hands on; leaves out those of `unknownDevice` and refuses
/// those of `fullDevice` (its queue full). Answers once `commit` is opened (the owner's commit).
final class RecordingRoutes: RouteIntake {
    static let unknownDevice = "unknown-device"
    static let fullDevice = "full-device"
    let received = Mutex<[(node: String, push: RoutedPush)]>([])
    /// Open (true) by default; while closed, answers wait.
    let commit = Mutex<(open: Bool, waiting: [@Sendable () -> Void])>((true, []))

    func routed(_ pushes: [RoutedPush], from node: String, on eventLoop: any EventLoop)
        -> EventLoopFuture<[RouteOutcome]>
    {
        var outcomes: [RouteOutcome] = []
        for push in pushes {
            switch push.deviceID {
            case Self.unknownDevice: outcomes.append(.untaken)
            case Self.fullDevice: outcomes.append(.refused(.tooManyRequests))
            default:
                received.withLock { $0.append((node, push)) }
                outcomes.append(.taken)
            }
        }
        let answer = eventLoop.makePromise(of: [RouteOutcome].self)
        let waits = commit.withLock { commit in
            if !commit.open { commit.waiting.append { [outcomes] in answer.succeed(outcomes) } }
            return !commit.open
        }
        if !waits { answer.succeed(outcomes) }
        return answer.futureResult
    }

    func close() { commit.withLock { $0.open = false } }

    func open() {
        let waiting = commit.withLock { commit in
            commit.open = true
            defer { commit.waiting = [] }
            return commit.waiting
        }
        for answer in waiting { answer() }
    }

    var ids: [APNsID] { received.withLock { $0.map(\.push.notification.id) } }
}

/// The node links over a real provider API on loopback: routed pushes in batches, the fleet's token,
/// and every push answered exactly once — taken by the owner, refused as its provider's request would be,
/// or untaken (its sender goes through the store).
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
            deviceID: device, expiresAt: n % 2 == 0 ? UnixTime(milliseconds: 1_800_000_600_000) : nil,
            stored: n % 5 == 0)
    }

    @Test func aBatchReadsBackAsItWasWritten() throws {
        let pushes = (0..<7).map { Self.push($0, payloadSize: $0 * 100) }
        #expect(try RouteBatch.decode(RouteBatch.encode(pushes)) == pushes)
        #expect(try RouteBatch.decode(RouteBatch.encode([])) == [])
    }

    @Test func anAnswerReadsBackAsItWasWritten() {
        let outcomes: [RouteOutcome] = [.taken, .untaken, .refused(.tooManyRequests), .taken, .untaken]
        #expect(RouteAnswer.encode(outcomes) == "1 untaken\n2 TooManyRequests\n4 untaken")
        #expect(RouteAnswer.decode(RouteAnswer.encode(outcomes), count: 5) == outcomes)
        #expect(RouteAnswer.decode("", count: 2) == [.taken, .taken])
        // A line that does not read leaves its push untaken; one out of range is ignored.
        #expect(RouteAnswer.decode("0 NoSuchReason\n7 untaken\nx", count: 2) == [.untaken, .taken])
    }

    @Test func bytesThatAreNoBatchAreNamed() {
        var buffer = RouteBatch.encode([Self.push(1)])
        buffer.moveWriterIndex(to: buffer.writerIndex - 3)
        #expect(throws: RouteBatchError.self) { try RouteBatch.decode(buffer) }
        #expect(
            performing: { try RouteBatch.decode(ByteBuffer(string: "GET / HTTP/1.1")) },
            throws: {
                ($0 as? RouteBatchError)?.description == "no route batch (PGR2)"
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
    func pushesReachTheOwnerInOrderAndEachIsAnsweredWithItsOutcome(transport: TestGateway.Transport) async throws {
        try await TestGateway.with { gateway in
            let tokens = NodeTokens(secret: Self.secret)
            let routes = RecordingRoutes()
            gateway.server.context.takeRoutes(routes, tokens: tokens)
            let links = Self.links(to: gateway, over: transport, tokens: tokens)
            defer { links.close() }
            #expect(links.linkedNodes == ["node-b"])
            let answers = Mutex<[APNsID: RouteOutcome]>([:])
            // 300 pushes of 4 KB: more than one batch's bytes.
            let pushes = (0..<300).map {
                Self.push(
                    $0,
                    device: $0 % 50 == 7
                        ? RecordingRoutes.unknownDevice : $0 % 50 == 9 ? RecordingRoutes.fullDevice : "device-1",
                    payloadSize: 4000)
            }
            // Nothing is answered before the owner's commit.
            routes.close()
            // Each answered on the loop it names (the provider connection's that waits for it).
            let loops = (0..<3).map { _ in MultiThreadedEventLoopGroup.singleton.next() }
            for (n, push) in pushes.enumerated() {
                let loop = loops[n % loops.count]
                links.forward(push, to: "node-b", answeringOn: loop) { outcome in
                    #expect(loop.inEventLoop)
                    answers.withLock { #expect($0.updateValue(outcome, forKey: push.notification.id) == nil) }
                }
            }
            try await eventually("the first batch arrived") { !routes.ids.isEmpty }
            #expect(answers.withLock { $0.isEmpty })
            routes.open()
            try await eventually("every push answered") { answers.withLock { $0.count } == pushes.count }
            for push in pushes {
                let expected: RouteOutcome =
                    switch push.deviceID {
                    case RecordingRoutes.unknownDevice: .untaken
                    case RecordingRoutes.fullDevice: .refused(.tooManyRequests)
                    default: .taken
                    }
                #expect(answers.withLock { $0[push.notification.id] } == expected)
            }
            #expect(routes.ids == pushes.filter { $0.deviceID == "device-1" }.map(\.notification.id))
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
            for n in 0..<5 {
                links.forward(Self.push(n), to: "node-b", answeringOn: nil) {
                    #expect($0 == .untaken)
                    returned.add(1, ordering: .relaxed)
                }
            }
            try await eventually("every push came back") { returned.load(ordering: .relaxed) == 5 }
            #expect(routes.ids.isEmpty)
            // No link to a node the database gave no address for.
            links.forward(Self.push(9), to: "node-c", answeringOn: nil) {
                #expect($0 == .untaken)
                returned.add(1, ordering: .relaxed)
            }
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
            #expect(garbage.bodyText == "no route batch (PGR2)")
            let unsigned = try await client.post(
                path: RouteBatch.path, headers: [], body: Array(RouteBatch.encode([Self.push(1)]).readableBytesView))
            #expect(unsigned.status == 403)
        }
    }

    /// The connection goes mid-stream (the owner stops): each push is answered once, taken by the owner
    /// or untaken, never both, never neither.
    @Test func aLinkCutMidStreamSettlesEveryPushExactlyOnce() async throws {
        let gateway = try await TestGateway.start()
        let tokens = NodeTokens(secret: Self.secret)
        let routes = RecordingRoutes()
        gateway.server.context.takeRoutes(routes, tokens: tokens)
        // The links' own event loops: the gateway's stop with them.
        let links = Self.links(to: gateway, over: .h2c, tokens: tokens, group: MultiThreadedEventLoopGroup.singleton)
        defer { links.close() }
        let returned = Mutex<[APNsID]>([])
        let answeredTaken = Mutex<[APNsID]>([])
        let pushes = (0..<3000).map { Self.push($0, payloadSize: 200) }
        for (index, push) in pushes.enumerated() {
            links.forward(push, to: "node-b", answeringOn: nil) { outcome in
                if outcome == .taken {
                    answeredTaken.withLock { $0.append(push.notification.id) }
                } else {
                    returned.withLock { $0.append(push.notification.id) }
                }
            }
            if index == 1000 {
                try await eventually("the first pushes arrived") { !routes.ids.isEmpty }
                try await gateway.stop()
            }
        }
        try await eventually("every push answered") {
            answeredTaken.withLock { $0.count } + returned.withLock { $0.count } >= pushes.count
        }
        let taken = Set(routes.ids)
        let back = Set(returned.withLock { $0 })
        #expect(taken.count == routes.ids.count, "a push taken twice")
        #expect(back.count == returned.withLock { $0.count }, "a push handed back twice")
        #expect(taken.isDisjoint(with: back))
        #expect(Set(answeredTaken.withLock { $0 }) == taken)
        #expect(taken.union(back) == Set(pushes.map(\.notification.id)))
        #expect(!back.isEmpty)
    }
}
