import DeviceProtocol
import Logging
import NIOCore
import NIOWebSocket
import PushModel
import PushPolicy
import PushStore
import Synchronization

/// One device's WebSocket connection: reads its messages, answers them through the hub, and closes the
/// connection alone when the device misbehaves (garbage, floods, never reading) — nothing it does
/// reaches other devices or the provider API.
final class DeviceSessionHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private enum State {
        case awaitingHello
        case authenticated(DeviceSlot)
        case closed

        var isClosed: Bool {
            if case .closed = self { return true }
            return false
        }
    }

    private let hub: DeviceHub
    private var state = State.awaitingHello
    private var session: ChannelSession?
    private var limiter: TokenBucket
    private var helloTimeout: Scheduled<Void>?
    private var notReadingTimeout: Scheduled<Void>?
    /// The device (once it said hello) whose id the log lines carry.
    private var loggedDevice: DeviceSlot?
    /// The source address (no port), for the enrolment rate.
    private var address = "?"

    init(hub: DeviceHub) {
        self.hub = hub
        self.limiter = TokenBucket(now: hub.clock())
    }

    /// The hub's logger with the connection's address and, once it said hello, its device id (never its
    /// secret) — made when a line is logged: kept per connection, its metadata was about 0.5 KB a device
    /// (heaptrack of a node with 10,000 connected).
    private var logger: Logger {
        var logger = hub.logger
        logger[metadataKey: "remote"] = "\(session?.channel.remoteAddress.map { "\($0)" } ?? "?")"
        if let loggedDevice, let id = hub.registry.deviceID(of: loggedDevice) {
            logger[metadataKey: "device"] = "\(id)"
        }
        return logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        session = ChannelSession(
            channel: context.channel, encoding: hub.deliveryEncoding,
            lingerMilliseconds: hub.settings.notReadingTimeoutSeconds * 1000)
        address = context.channel.remoteAddress?.ipAddress ?? "?"
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        helloTimeout = context.eventLoop.scheduleTask(in: .seconds(hub.settings.helloTimeoutSeconds)) {
            let (handler, context) = bound.value
            if case .awaitingHello = handler.state {
                handler.close(context, reason: .protocolError, "no hello in time")
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        helloTimeout?.cancel()
        notReadingTimeout?.cancel()
        if case .authenticated(let device) = state, let session {
            session.end()
            hub.disconnected(device, session: session)
            logger.info("device disconnected")
        }
        state = .closed
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            notReadingTimeout?.cancel()
            notReadingTimeout = nil
        } else if notReadingTimeout == nil {
            // The device stopped reading: its messages pile up here. Give it a while, then let it go.
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            notReadingTimeout = context.eventLoop.scheduleTask(in: .seconds(hub.settings.notReadingTimeoutSeconds)) {
                let (handler, context) = bound.value
                guard !context.channel.isWritable else { return }
                handler.hub.count { $0.closedForMisbehaviour += 1 }
                context.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Malformed WebSocket framing (NIO's decoder or aggregator): this device only, once.
        guard !isClosing else { return }
        hub.count { $0.closedForMisbehaviour += 1 }
        let detail: String
        switch error {
        case NIOWebSocketError.invalidFrameLength, is NIOWebSocketFrameAggregator.Error:
            detail = "a message over devices.max_frame_bytes (\(hub.settings.maximumFrameBytes) bytes)"
        default:
            detail = "\(error)"
        }
        close(context, reason: .protocolError, detail)
    }

    /// The gateway closed the session (the handler for a reason of the device's, or the hub): what the
    /// device still sends is read and dropped until it answers the close frame, closes, or the linger ends
    /// (`ChannelSession.close`).
    private var isClosing: Bool { state.isClosed || session?.hasEnded == true }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard !isClosing else {
            // Its close frame answers ours: the connection is over (RFC 6455 §5.5.1).
            if frame.opcode == .connectionClose { context.close(promise: nil) }
            return
        }
        switch frame.opcode {
        case .text:
            let bytes = frame.unmaskedData.readableBytesView
            // RFC 6455 §8.1: a text frame that is not UTF-8 fails the connection with 1007.
            guard String(validating: bytes, as: UTF8.self) != nil else {
                hub.count { $0.closedForMisbehaviour += 1 }
                return close(context, reason: .invalidUTF8, "a text frame that is not valid UTF-8")
            }
            let message: DeviceMessage
            do {
                message = try DeviceMessage.decode(bytes)
            } catch {
                hub.count { $0.closedForMisbehaviour += 1 }
                return close(context, reason: .protocolError, error.message)
            }
            // The acknowledgement of a push the gateway sent costs no token: a device catching up on
            // thousands of pushes kept for it answers each at once, and that is no flood. Every other
            // message (an acknowledgement of nothing in flight among them) takes one.
            if case .authenticated(let device) = state, case .ack(let apnsID) = message,
                hub.acknowledged(device, apnsID: apnsID)
            {
                return
            }
            guard limiter.take(hub.settings.messageRate, now: hub.clock()) else {
                hub.count { $0.closedForMisbehaviour += 1 }
                return close(
                    context, reason: .flooding, "more than \(hub.settings.messagesPerSecond) messages per second")
            }
            handle(message, context)
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .pong:
            break
        case .connectionClose:
            // The device ends the session: it is gone now, not when TCP closes, and what it had not
            // acknowledged waits for its next connection.
            if case .authenticated(let device) = state, let session {
                session.end()
                hub.disconnected(device, session: session)
                logger.info("device disconnected", metadata: ["close": "by the device"])
            }
            state = .closed
            let close = WebSocketFrame(fin: true, opcode: .connectionClose, data: ByteBuffer())
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(close)).whenComplete { _ in channel.close(promise: nil) }
        default:
            hub.count { $0.closedForMisbehaviour += 1 }
            close(context, reason: .protocolError, "only text frames carry device messages")
        }
    }

    private func handle(_ message: DeviceMessage, _ context: ChannelHandlerContext) {
        switch (state, message) {
        case (.awaitingHello, .register(let enrolment)):
            switch hub.enrolment(presented: enrolment, from: address) {
            case .allowed: break
            case .wrongSecret:
                hub.count { $0.enrolmentsRefused += 1 }
                return close(context, reason: .authFailed, "register: missing or wrong enrolment secret")
            case .limited:
                hub.count { $0.enrolmentsRefused += 1 }
                return close(context, reason: .enrolmentLimited, "register: too many registrations from this address")
            }
            let device = hub.registry.register()
            logger.info("device registered", metadata: ["device": "\(device.id)"])
            sendOnceCommitted(.registered(deviceID: device.id, secret: device.secret), context)
        case (.awaitingHello, .hello(let id, let secret)):
            guard let device = hub.registry.authenticate(id: id, secret: secret), let session else {
                hub.count { $0.authenticationFailures += 1 }
                return close(context, reason: .authFailed, "unknown device or wrong secret")
            }
            helloTimeout?.cancel()
            state = .authenticated(device)
            hub.registry.seen(device, at: hub.clock())
            loggedDevice = device
            logger.info("device connected")
            let apps = hub.registry.apps(of: device).map { InstalledApp(bundleID: $0.bundleID, token: $0.token.hex) }
            send(.welcome(deviceID: id, apps: apps, keepAliveSeconds: hub.settings.keepAliveSeconds), context)
            hub.connected(device, session: session)
        case (.awaitingHello, _):
            close(context, reason: .protocolError, "say hello (or register) first")
        case (.authenticated(let device), .install(let bundleID)):
            guard Topic(bundleID) != nil, let token = hub.registry.install(bundleID, on: device) else {
                return send(.error(message: "install: '\(bundleID)' is not a bundle id"), context)
            }
            logger.debug("app installed", metadata: ["bundle_id": "\(bundleID)"])
            sendOnceCommitted(.installed(InstalledApp(bundleID: bundleID, token: token.hex)), context)
        case (.authenticated(let device), .uninstall(let bundleID)):
            if hub.registry.uninstall(bundleID, on: device, at: hub.clock()) {
                hub.uninstalled(device, bundleID: bundleID)
                logger.debug("app uninstalled", metadata: ["bundle_id": "\(bundleID)"])
                sendOnceCommitted(.uninstalled(bundleID: bundleID), context)
            } else {
                send(.error(message: "uninstall: '\(bundleID)' is not installed"), context)
            }
        case (.authenticated, .ack):
            break  // told to the hub in channelRead, before the flood limit
        case (.authenticated(let device), .complete(let apnsID, let bundleID, let result)):
            guard let id = APNsID(header: apnsID), let result = CompletionResult(rawValue: result) else {
                return send(
                    .error(message: "complete: needs an apns_id and a result of newData, noData or failed"), context)
            }
            hub.completed(device, bundleID: bundleID, apnsID: id, result: result)
        case (.authenticated(let device), .notWoken(let apnsID, let bundleID, let reason)):
            guard let id = APNsID(header: apnsID), let reason = WakeRefusal(rawValue: reason) else {
                let reasons = WakeRefusal.allCases.map(\.rawValue).joined(separator: ", ")
                return send(.error(message: "not_woken: needs an apns_id and a reason of \(reasons)"), context)
            }
            hub.notWoken(device, bundleID: bundleID, apnsID: id, reason: reason)
        case (.authenticated(let device), .keepAlive(let sequence)):
            let released = hub.keepAlive(device).map(hub.deliveryEncoding.delivery)
            send(.keepAliveAck(sequence: sequence, notifications: released), context)
        case (.authenticated(let device), .appState(let bundleID, let state)):
            guard let state = AppState(rawValue: state) else {
                return send(.error(message: "app_state: unknown state '\(state)'"), context)
            }
            hub.appStateChanged(device, bundleID: bundleID, state: state)
        case (.authenticated(let device), .conditions(let lowPower, let refreshOff, let debugger, let others)):
            hub.conditionsChanged(
                device, lowPowerMode: lowPower, backgroundAppRefreshOff: refreshOff, debuggerAttached: debugger,
                otherAppsWakesPerDay: others)
        case (.authenticated(let device), .rebooted):
            hub.rebooted(device)
        case (.authenticated(let device), .frequentPushes(let bundleID, let enabled)):
            guard hub.registry.apps(of: device).contains(where: { $0.bundleID == bundleID }) else {
                return send(.error(message: "frequent_pushes: '\(bundleID)' is not installed"), context)
            }
            hub.frequentPushesChanged(device, bundleID: bundleID, enabled: enabled)
        case (.authenticated(let device), .activityToken(let bundleID, let purpose)):
            guard let token = hub.registry.activityToken(bundleID, activity: purpose.key, on: device) else {
                return send(.error(message: "activity_token: '\(bundleID)' is not installed"), context)
            }
            logger.debug("activity token issued", metadata: ["bundle_id": "\(bundleID)", "activity": "\(purpose.key)"])
            sendOnceCommitted(.activityToken(bundleID: bundleID, purpose: purpose, token: token.hex), context)
        case (.authenticated(let device), .subscribeChannel(let bundleID, let channelText)):
            guard let channel = ChannelID(channelText) else {
                return send(.error(message: "subscribe_channel: '\(channelText)' is not a channel id"), context)
            }
            switch hub.subscribe(device, bundleID: bundleID, channel: channel, answeringOn: context.eventLoop) {
            case .failure(.notInstalled):
                send(.error(message: "subscribe_channel: '\(bundleID)' is not installed"), context)
            case .failure(.unknownChannel):
                send(
                    .error(message: "subscribe_channel: '\(channelText)' is no live channel of '\(bundleID)'"), context)
            case .success(let stored):
                logger.debug("channel subscribed", metadata: ["bundle_id": "\(bundleID)", "channel": "\(channelText)"])
                sendOnceCommitted(
                    .channelSubscribed(bundleID: bundleID, channelID: channelText), after: stored, context)
            }
        case (.authenticated(let device), .unsubscribeChannel(let channelText)):
            guard let channel = ChannelID(channelText), hub.unsubscribe(device, channel: channel) else {
                return send(.error(message: "unsubscribe_channel: not subscribed to '\(channelText)'"), context)
            }
        case (.authenticated, .register), (.authenticated, .hello):
            close(context, reason: .protocolError, "already authenticated")
        case (.closed, _):
            break
        }
    }

    /// Answers a registry change once the store has it, so that a device never holds an identity or a
    /// token the gateway could forget in a crash.
    private func sendOnceCommitted(
        _ message: GatewayMessage, after change: EventLoopFuture<Void>? = nil, _ context: ChannelHandlerContext
    ) {
        guard let writer = hub.writer else { return send(message, context) }
        let committed = change ?? writer.enqueue(answeringOn: context.eventLoop) { _ in }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        committed.whenComplete { result in
            let (handler, context) = bound.value
            switch result {
            case .success: handler.send(message, context)
            case .failure: handler.close(context, reason: .storeUnavailable, "the gateway could not store the change")
            }
        }
    }

    private func send(_ message: GatewayMessage, _ context: ChannelHandlerContext) {
        let frame = WebSocketFrame(
            fin: true, opcode: .text, data: context.channel.allocator.buffer(bytes: message.encoded()))
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
    }

    private func close(_ context: ChannelHandlerContext, reason: ClosingReason, _ detail: String) {
        guard !state.isClosed else { return }
        if case .authenticated(let device) = state, let session {
            session.end()
            hub.disconnected(device, session: session)
        }
        state = .closed
        logger.notice("device connection closed", metadata: ["reason": "\(reason)", "detail": "\(detail)"])
        session?.close(reason, reconnectAfterMilliseconds: nil, detail: detail)
    }
}
