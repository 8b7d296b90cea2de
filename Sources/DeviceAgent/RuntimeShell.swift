import AsyncHTTPClient
import DeviceProtocol
import DeviceRuntime
import NIOCore
import NIOHTTP1
import PushModel

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

        public init(
            profile: IOSProfile, apps: [(bundleID: String, behaviour: AppBehaviour)], origin: String, seed: UInt64,
            users: UserProfile? = nil
        ) {
            self.profile = profile
            self.apps = apps
            self.origin = origin
            self.seed = seed
            self.users = users
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

    private var runtime: DeviceRuntime
    private var user: UserModel?
    private var timer: Scheduled<Void>?
    private var transfers: [Int: Running] = [:]
    /// Bytes a cancelled download had, by its id: resume data for `moveToBackgroundSession` (R11).
    private var resumeData: [Int: Int64] = [:]
    private var stopped = false
    /// Transfers paused while the device sleeps (R4), with the bytes they had: resumed from there.
    private var paused: [Int: (request: TransferRequest, bytes: Int64)] = [:]
    /// Item sizes the apps ask for (`AppBehaviour.itemBytes`), by bundle id.
    private let itemBytes: [String: Int]
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

    /// `record` gets every action the runtime asks for; `transferred` every transfer that ended.
    public init(
        settings: Settings, loop: any EventLoop, http: HTTPClient, clock: @escaping @Sendable () -> UnixTime,
        record: @escaping @Sendable (RuntimeAction, UnixTime) -> Void,
        transferred: @escaping @Sendable (TransferFigures) -> Void = { _ in }
    ) {
        origin = settings.origin
        self.transferred = transferred
        var sizes: [String: Int] = [:]
        for app in settings.apps { if let bytes = app.behaviour.itemBytes { sizes[app.bundleID] = bytes } }
        itemBytes = sizes
        self.loop = loop
        self.http = http
        self.clock = clock
        self.record = record
        let now = clock()
        runtime = DeviceRuntime(profile: settings.profile, apps: settings.apps, seed: settings.seed, now: now)
        user = settings.users.map {
            UserModel(
                profile: $0, apps: settings.apps.map(\.bundleID),
                locationApps: settings.apps.filter(\.behaviour.monitorsLocation).map(\.bundleID), seed: settings.seed,
                now: now)
        }
    }

    /// Connects the shell to its agent: messages go out through `send`; deliveries come in through the
    /// agent's events.
    func attach(label: String, send: @escaping @Sendable (DeviceMessage) -> Void) {
        loop.execute {
            self.deviceLabel = label
            self.send = send
            if self.user?.refreshOff == true {
                self.handleOnLoop(.backgroundAppRefresh(enabled: false))
            } else {
                self.armTimer()
            }
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

    /// The app's state now, read on the device's loop.
    public func state(of bundleID: String) -> EventLoopFuture<AppRuntime?> {
        loop.submit { self.runtime.apps[bundleID] }
    }

    public func stop() {
        loop.execute {
            self.stopped = true
            self.timer?.cancel()
            for running in self.transfers.values { running.task.cancel() }
            self.transfers.removeAll()
            self.paused.removeAll()
        }
    }

    private func handleOnLoop(_ event: RuntimeEvent) {
        guard !stopped else { return }
        let now = clock()
        // The user sees an alert, and may open its app for it.
        if case .pushDelivered(let bundleID, _, false) = event { user?.alertShown(bundleID, at: now) }
        let actions = runtime.handle(event, at: now)
        for action in actions { perform(action, now: now) }
        armTimer()
    }

    private func armTimer() {
        timer?.cancel()
        timer = nil
        guard !stopped, let deadline = [runtime.nextDeadline(), user?.nextAt].compactMap({ $0 }).min() else { return }
        // At most an hour ahead (a foreground wake has no deadline): an early tick changes nothing.
        let wait = min(3_600_000, max(0, deadline.milliseconds &- clock().milliseconds))
        timer = loop.scheduleTask(deadline: TimerSlack.deadline(in: .milliseconds(wait))) { [self] in
            self.timer = nil
            // The user's events due now, then the runtime's own deadlines.
            if let at = self.user?.nextAt, at.milliseconds <= self.clock().milliseconds {
                let events = self.user!.fire(at: self.clock())
                for event in events { self.handleOnLoop(event) }
            }
            self.handleOnLoop(.tick)
        }
    }

    private func perform(_ action: RuntimeAction, now: UnixTime) {
        record(action, now)
        switch action {
        case .appState(let bundleID, let state):
            send(.appState(bundleID: bundleID, state: state.rawValue))
        case .complete(let apnsID, let bundleID, let result):
            send(.complete(apnsID: apnsID, bundleID: bundleID, result: result))
        case .conditions(let lowPowerMode, let refreshOff):
            send(.conditions(lowPowerMode: lowPowerMode, backgroundAppRefreshOff: refreshOff))
        case .startTransfer(let request):
            start(request, resumeFrom: request.resumeFrom)
        case .cancelTransfer(let id):
            cancel(id)
        case .pauseTransfer(let id):
            guard let running = transfers.removeValue(forKey: id) else { break }
            running.task.cancel()
            paused[id] = (running.request, running.resumeFrom + running.delegate.bytes)
        case .resumeTransfer(let id):
            guard let was = paused.removeValue(forKey: id) else { break }
            // A download goes on from its bytes; a manifest (small, read whole) is asked for again.
            start(was.request, resumeFrom: was.request.content == .manifest ? 0 : was.bytes)
        case .moveToBackgroundSession(let from, let to):
            let had = transfers[from].map { $0.resumeFrom + $0.delegate.bytes } ?? paused[from]?.bytes ?? 0
            cancel(from)
            // A download resumes from its resume data (R11).
            start(to, resumeFrom: had)
        case .woken, .terminated, .relaunched, .opened, .contentUpdated, .wakeRefused:
            break
        }
    }

    private func start(_ request: TransferRequest, resumeFrom: Int64) {
        let from = max(0, resumeFrom == TransferRequest.resumeFromCancelled ? 0 : resumeFrom)
        let path: String
        switch request.content {
        case .manifest: path = "/manifest"
        case .item(let version):
            var query: [String] = []
            if let bytes = itemBytes[request.bundleID] { query.append("bytes=\(bytes)") }
            if request.slowdown > 1 { query.append("slowdown=\(request.slowdown)") }
            path = "/items/\(version)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        }
        let id = request.id
        guard var http = try? HTTPClient.Request(url: origin + path) else {
            return handleOnLoop(.transferFinished(id: id, result: .failed(bytesSoFar: 0)))
        }
        http.headers.add(name: "x-device-id", value: deviceLabel)
        if from > 0 { http.headers.add(name: "range", value: "bytes=\(from)-") }
        let delegate = TransferDelegate(keepsBody: request.content == .manifest)
        let task = self.http.execute(request: http, delegate: delegate, eventLoop: .delegateAndChannel(on: loop))
        transfers[id] = Running(request: request, task: task, delegate: delegate, resumeFrom: from)
        let started = clock()
        task.futureResult.hop(to: loop).whenComplete { [self] outcome in
            // A cancelled transfer was removed first: its end means nothing to the runtime.
            guard self.transfers.removeValue(forKey: id) != nil else { return }
            let result = Self.result(of: outcome, request.content, from: from)
            var succeeded = true
            if case .failed = result { succeeded = false }
            var background = false
            if case .background = request.session { background = true }
            self.transferred(
                TransferFigures(
                    bundleID: request.bundleID, background: background, bytes: delegate.bytes,
                    milliseconds: self.clock().milliseconds - started.milliseconds, succeeded: succeeded))
            self.handleOnLoop(.transferFinished(id: id, result: result))
        }
    }

    private func cancel(_ id: Int) {
        paused.removeValue(forKey: id)
        transfers.removeValue(forKey: id)?.task.cancel()
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
