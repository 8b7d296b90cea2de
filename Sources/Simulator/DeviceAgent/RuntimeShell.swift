import AsyncHTTPClient
import DeviceProtocol
import DeviceRuntime
import NIOCore
import NIOHTTP1
import PushModel
import Synchronization

/// The I/O shell of one device's `DeviceRuntime`: it feeds the runtime its events on the device's event
/// loop (so the runtime, its timer and its transfers are confined to one thread, no lock), performs the
/// actions that come out — device-protocol messages through the agent, real HTTP transfers to the
/// content server, the runtime's timer — and hands every action to `record` for the figures.
public final class RuntimeShell: @unchecked Sendable {
    // @unchecked: every mutable field is touched only on `loop` (`handle` hops there first).

    public struct Settings: Sendable {
        public var profile: IOSProfile
        public var apps: [(bundleID: String, behaviour: AppBehaviour)]
        /// The content server: `http://host:port` (its `/manifest` and `/items/<n>`).
        public var origin: String
        public var seed: UInt64
        /// What the device's user does (opens, leaves, force-quits, Low Power Mode); nil: only the
        /// events fed from outside.
        public var users: UserProfile?
        /// The users do nothing at or after this instant (a run with a planned end); nil: never stop.
        public var usersUntil: UnixTime?

        public init(
            profile: IOSProfile, apps: [(bundleID: String, behaviour: AppBehaviour)], origin: String, seed: UInt64,
            users: UserProfile? = nil, usersUntil: UnixTime? = nil
        ) {
            self.profile = profile
            self.apps = apps
            self.origin = origin
            self.seed = seed
            self.users = users
            self.usersUntil = usersUntil
        }
    }

    /// The content server (`Settings.origin`); the rest of the settings live in the runtime and the user
    /// model (not kept twice: a fleet has 10,000 of these).
    let origin: String
    let loop: any EventLoop
    let http: HTTPClient
    let clock: @Sendable () -> UnixTime
    /// Sends a message to the gateway (the agent's connection; dropped while it is down, as a phone's).
    var send: @Sendable (DeviceMessage) -> Void = { _ in }
    let record: @Sendable (RuntimeAction, UnixTime) -> Void
    /// Sent as `x-device-id` to the content server.
    var deviceLabel = ""

    private var iphone: SimulatedIPhone
    /// When the device first connected (ms; 0: not yet): its runtime started then. A forecast of the
    /// same run starts the device at the same instant.
    private let firstConnected = Atomic<Int64>(0)
    private var timer: LoopTimers.Timer?
    private var transfers: [Int: Running] = [:]
    private var stopped = false
    /// The apps' bundle ids, by slot (the device protocol names apps by bundle id, the runtime by slot).
    private let bundleIDs: [String]
    /// Item sizes the apps ask for (`AppBehaviour.itemBytes`), by slot.
    private let itemBytes: [Int?]
    let transferred: @Sendable (TransferFigures) -> Void

    struct Running {
        var request: TransferRequest
        var task: HTTPClient.Task<TransferDelegate.Outcome>
        var delegate: TransferDelegate
        var resumeFrom: Int64
    }

    /// One transfer that ended (finished or failed; a cancelled one is not reported).
    public struct TransferFigures: Sendable {
        public var bundleID: String
        public var background: Bool
        public var bytes: Int64
        public var milliseconds: Int64
        public var succeeded: Bool
    }

    /// `record` gets every action the runtime asks for; `transferred` every transfer that ended. The
    /// iPhone (its users' plans) is made at `createdAt` (default: now).
    public init(
        settings: Settings, loop: any EventLoop, http: HTTPClient, clock: @escaping @Sendable () -> UnixTime,
        createdAt: UnixTime? = nil,
        record: @escaping @Sendable (RuntimeAction, UnixTime) -> Void,
        transferred: @escaping @Sendable (TransferFigures) -> Void = { _ in }
    ) {
        origin = settings.origin
        iosVersion = settings.profile.version
        self.transferred = transferred
        bundleIDs = settings.apps.map(\.bundleID)
        itemBytes = settings.apps.map(\.behaviour.itemBytes)
        self.loop = loop
        self.http = http
        self.clock = clock
        self.record = record
        iphone = SimulatedIPhone(
            profile: settings.profile, apps: settings.apps, users: settings.users, seed: settings.seed,
            now: createdAt ?? clock())
        if let until = settings.usersUntil { iphone.usersUntil = until.milliseconds }
    }

    /// The iOS the device plays.
    public let iosVersion: Int

    /// When the device first connected (its runtime started then), or nil.
    public var connectedAt: UnixTime? {
        let at = firstConnected.load(ordering: .relaxed)
        return at == 0 ? nil : UnixTime(milliseconds: at)
    }

    /// Connects the shell to its agent: messages go out through `send`; deliveries come in through the
    /// agent's events.
    func attach(label: String, send: @escaping @Sendable (DeviceMessage) -> Void) {
        loop.execute {
            self.deviceLabel = label
            self.send = send
            guard !self.stopped else { return }
            var link = HTTPLink(shell: self)
            let now = self.clock()
            _ = self.firstConnected.compareExchange(expected: 0, desired: now.milliseconds, ordering: .relaxed)
            for action in self.iphone.start(at: now, link: &link) { self.perform(action, now: now) }
            self.armTimer()
        }
    }

    /// Feeds an event (from any thread).
    public func handle(_ event: RuntimeEvent) {
        if loop.inEventLoop {
            handleOnLoop(event)
        } else {
            loop.execute { self.handleOnLoop(event) }
        }
    }

    /// A push the agent received (from any thread), as the device protocol names it. Nothing happens
    /// for an app the device does not have, or for an id that is not a UUID (the gateway sends UUIDs).
    public func delivered(bundleID: String, apnsID: String, silent: Bool) {
        guard let app = bundleIDs.firstIndex(of: bundleID), let id = APNsID(header: apnsID) else { return }
        handle(.pushDelivered(app: AppSlot(app), apnsID: id, silent: silent))
    }

    /// An update reached the app's kept Live Activity `activity` (from any thread), carrying `version`,
    /// stamped `timestamp` (`aps.timestamp`, seconds: what orders it).
    public func liveActivityUpdated(bundleID: String, activity: Int, version: Int, timestamp: Int64) {
        guard let app = bundleIDs.firstIndex(of: bundleID) else { return }
        handle(.liveActivityUpdated(app: AppSlot(app), activity: activity, version: version, timestamp: timestamp))
    }

    /// A widget or control push reached the app (from any thread): that surface reloads to `version`.
    public func widgetKitPushed(bundleID: String, surface: WidgetKitSurface, version: Int) {
        guard let app = bundleIDs.firstIndex(of: bundleID) else { return }
        handle(.widgetKitPushed(app: AppSlot(app), surface: surface, version: version))
    }

    /// The app's state now, read on the device's loop.
    public func state(of bundleID: String) -> EventLoopFuture<AppRuntime?> {
        loop.submit { self.iphone.runtime.apps[bundleID] }
    }

    /// Whether the device has settled: its users have nothing left to do before their end
    /// (`Settings.usersUntil`) and no transfer is running. Read on the device's loop.
    public func settled() -> EventLoopFuture<Bool> {
        loop.submit { self.iphone.usersDone && self.transfers.isEmpty }
    }

    public func stop() {
        loop.execute {
            self.stopped = true
            self.timer?.cancel()
            for running in self.transfers.values { running.task.cancel() }
            self.transfers.removeAll()
        }
    }

    private func handleOnLoop(_ event: RuntimeEvent) {
        guard !stopped else { return }
        let now = clock()
        var link = HTTPLink(shell: self)
        for action in iphone.handle(event, at: now, link: &link) { perform(action, now: now) }
        armTimer()
    }

    private func armTimer() {
        timer?.cancel()
        timer = nil
        guard !stopped, let deadline = iphone.nextDeadline else { return }
        // At most an hour ahead (a foreground wake has no deadline): an early tick changes nothing.
        let wait = min(3_600_000, max(0, deadline.milliseconds &- clock().milliseconds))
        timer = LoopTimers.schedule(on: loop, at: TimerSlack.deadline(in: .milliseconds(wait))) { [self] in
            self.timer = nil
            guard !self.stopped else { return }
            let now = self.clock()
            var link = HTTPLink(shell: self)
            for action in self.iphone.advance(to: now, link: &link) { self.perform(action, now: now) }
            self.armTimer()
        }
    }

    /// The protocol's messages to the gateway; every action to the figures. (Transfers were started
    /// and cancelled on the link already.)
    private func perform(_ action: RuntimeAction, now: UnixTime) {
        record(action, now)
        switch action {
        case .appState(let app, let state):
            send(.appState(bundleID: bundleIDs[Int(app.index)], state: state.rawValue))
        case .complete(let apnsID, let app, let result):
            send(.complete(apnsID: apnsID.description, bundleID: bundleIDs[Int(app.index)], result: result.rawValue))
        case .conditions(let lowPowerMode, let refreshOff, let debugger, let others):
            send(
                .conditions(
                    lowPowerMode: lowPowerMode, backgroundAppRefreshOff: refreshOff, debuggerAttached: debugger,
                    otherAppsWakesPerDay: others))
        case .rebooted:
            send(.rebooted)
        case .wakeRefused(let app, let apnsID, let reason):
            send(.notWoken(apnsID: apnsID.description, bundleID: bundleIDs[Int(app.index)], reason: reason.rawValue))
        case .startTransfer, .cancelTransfer, .pauseTransfer, .resumeTransfer, .moveToBackgroundSession, .woken,
            .terminated, .relaunched, .opened, .contentUpdated, .activityUpdated, .activityViewed,
            .widgetKitReloaded, .widgetKitViewed:
            break
        }
    }

    /// The iPhone's transfers as real HTTP requests to the content server (on the shell's loop).
    private struct HTTPLink: TransferLink {
        let shell: RuntimeShell

        mutating func start(_ request: TransferRequest, from: Int64, at now: UnixTime) {
            shell.start(request, resumeFrom: from)
        }

        mutating func cancel(_ id: Int, at now: UnixTime) -> Int64? {
            guard let running = shell.transfers.removeValue(forKey: id) else { return nil }
            running.task.cancel()
            return running.resumeFrom + running.delegate.bytes
        }
    }

    private func start(_ request: TransferRequest, resumeFrom from: Int64) {
        let path: String
        switch request.content {
        case .manifest: path = "/manifest"
        case .item(let version):
            var query: [String] = []
            if let bytes = itemBytes[Int(request.app.index)] { query.append("bytes=\(bytes)") }
            if request.slowdown > 1 { query.append("slowdown=\(request.slowdown)") }
            path = "/items/\(version)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        }
        let id = request.id
        // Called while the iPhone handles an event: its end is fed back later, never from inside.
        guard var http = try? HTTPClient.Request(url: origin + path) else {
            return loop.execute { self.handleOnLoop(.transferFinished(id: id, result: .failed(bytesSoFar: 0))) }
        }
        http.headers.add(name: "x-device-id", value: deviceLabel)
        if from > 0 { http.headers.add(name: "range", value: "bytes=\(from)-") }
        let delegate = TransferDelegate(keepsBody: request.content == .manifest)
        let task = self.http.execute(request: http, delegate: delegate, eventLoop: .delegateAndChannel(on: loop))
        transfers[id] = Running(request: request, task: task, delegate: delegate, resumeFrom: from)
        let started = clock()
        // Always a later turn of the loop: a future already failed would otherwise call back from inside
        // the iPhone's `handle`.
        task.futureResult.whenComplete { [self] outcome in
            self.loop.execute {
                self.ended(id, request, outcome, from: from, delegate: delegate, started: started)
            }
        }
    }

    private func ended(
        _ id: Int, _ request: TransferRequest, _ outcome: Result<TransferDelegate.Outcome, any Error>, from: Int64,
        delegate: TransferDelegate, started: UnixTime
    ) {
        // A cancelled transfer was removed first: its end means nothing to the runtime.
        guard transfers.removeValue(forKey: id) != nil else { return }
        let result = Self.result(of: outcome, request.content, from: from)
        var succeeded = true
        if case .failed = result { succeeded = false }
        var background = false
        if case .background = request.session { background = true }
        transferred(
            TransferFigures(
                bundleID: bundleIDs[Int(request.app.index)], background: background, bytes: delegate.bytes,
                milliseconds: clock().milliseconds - started.milliseconds, succeeded: succeeded))
        handleOnLoop(.transferFinished(id: id, result: result))
    }

    static func result(
        of outcome: Result<TransferDelegate.Outcome, any Error>, _ content: TransferContent, from: Int64
    ) -> TransferResult {
        guard case .success(let response) = outcome, (200..<300).contains(response.status) else {
            let bytes = (try? outcome.get())?.bytes ?? 0
            return .failed(bytesSoFar: from + bytes)
        }
        switch content {
        case .manifest:
            guard let version = ContentManifest.version(of: response.body) else { return .failed(bytesSoFar: 0) }
            return .manifest(version: version)
        case .item(let version):
            return .item(version: version, bytes: from + response.bytes)
        }
    }
}

/// Reads a response as it arrives: counts the bytes, keeps the body only when asked (the manifest).
final class TransferDelegate: HTTPClientResponseDelegate, @unchecked Sendable {
    // @unchecked: AsyncHTTPClient calls it on the request's event loop only (pinned by the shell).
    struct Outcome: Sendable {
        var status: Int
        var bytes: Int64
        var body: [UInt8]
    }

    let keepsBody: Bool
    private(set) var status = 0
    private(set) var bytes: Int64 = 0
    private var body: [UInt8] = []

    init(keepsBody: Bool) { self.keepsBody = keepsBody }

    func didReceiveHead(task: HTTPClient.Task<Outcome>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        status = Int(head.status.code)
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Outcome>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        bytes += Int64(buffer.readableBytes)
        if keepsBody, body.count < 1 << 16 { body.append(contentsOf: buffer.readableBytesView) }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Outcome>) throws -> Outcome {
        Outcome(status: status, bytes: bytes, body: body)
    }
}
