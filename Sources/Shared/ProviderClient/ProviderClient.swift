import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// An HTTP/2 client of the provider API, shaped like an APNs client: one connection, many concurrent
/// streams. `pushgate send` and the tests use it; `step`s let a test send frames the way a broken or
/// hostile client would.
public struct ProviderClient: Sendable {
    public enum Security: Sendable {
        case cleartext
        /// TLS with the given trust roots (PEM file paths; empty: no verification), ALPN protocols
        /// (empty: offer none) and an optional client certificate chain and key (PEM file paths).
        case tls(trustRoots: [String], alpn: [String], clientCertificate: (chain: String, key: String)?)
    }

    public struct Response: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]
        /// How many DATA frames carried the body (APNs sends none on 200, one on errors).
        public var dataFrames: Int
        /// Whether the stream ended on the HEADERS frame.
        public var endedOnHeaders: Bool

        public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
        public var bodyText: String { String(decoding: body, as: UTF8.self) }
    }

    public enum ClientError: Error, Equatable {
        case streamReset(HTTP2ErrorCode)
        case streamClosedWithoutResponse
    }

    /// One step of a request as frames.
    public enum Step: Sendable {
        case headers(HPACKHeaders, endStream: Bool)
        case data([UInt8], endStream: Bool)
        case reset(HTTP2ErrorCode)
    }

    public let channel: any Channel
    private let multiplexer: NIOHTTP2Handler.StreamMultiplexer

    /// `validating: false` sends header blocks and bodies exactly as given, even malformed ones (for tests
    /// of a server's strictness).
    public static func connect(
        host: String, port: Int, security: Security, group: any EventLoopGroup, serverName: String? = "localhost",
        validating: Bool = true
    ) async throws -> ProviderClient {
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        if !validating {
            connection.headerBlockValidation = .disabled
            connection.contentLengthValidation = .disabled
        }
        var sslContext: NIOSSLContext?
        if case .tls(let roots, let alpn, let clientCertificate) = security {
            sslContext = try tlsContext(trustRoots: roots, alpn: alpn, clientCertificate: clientCertificate)
        }
        let configuration = connection
        let channel = try await bootstrap(group: group, tls: sslContext, serverName: serverName) { channel in
            _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                mode: .client, connectionConfiguration: configuration, streamConfiguration: .init()
            ) { stream in stream.eventLoop.makeSucceededVoidFuture() }
        }
        .connect(host: host, port: port).get()
        let multiplexer = try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.handler(type: NIOHTTP2Handler.self).syncMultiplexer()
        }.get()
        return ProviderClient(channel: channel, multiplexer: multiplexer)
    }

    /// A provider connection's client side up to HTTP/2: TCP_NODELAY, TLS when `tls` is given, then
    /// `http2` adds the HTTP/2 handling (a stream multiplexer here, a frame-level handler in the load
    /// generator). The pipeline is built before the connection is up, so no byte of the server's preface
    /// can arrive ahead of the HTTP/2 handler.
    public static func bootstrap(
        group: any EventLoopGroup, tls: NIOSSLContext?, serverName: String?,
        http2: @escaping @Sendable (any Channel) throws -> Void
    ) -> ClientBootstrap {
        ClientBootstrap(group: group)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    }
                    try http2(channel)
                }
            }
    }

    /// A client TLS context: the trust roots (PEM file paths; empty: no verification, for development
    /// certificates), the ALPN protocols, and an optional client certificate chain and key (PEM paths).
    public static func tlsContext(
        trustRoots roots: [String], alpn: [String], clientCertificate: (chain: String, key: String)? = nil
    ) throws -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        if roots.isEmpty {
            tls.certificateVerification = .none
        } else {
            tls.trustRoots = .certificates(try roots.flatMap { try NIOSSLCertificate.fromPEMFile($0) })
        }
        tls.applicationProtocols = alpn
        if let clientCertificate {
            tls.certificateChain = try NIOSSLCertificate.fromPEMFile(clientCertificate.chain).map { .certificate($0) }
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: clientCertificate.key, format: .pem))
        }
        return try NIOSSLContext(configuration: tls)
    }

    /// A POST as APNs clients send it: `:scheme https` even over h2c, no content-length.
    public func post(path: String, headers: [(String, String)], body: [UInt8]) async throws -> Response {
        var head: HPACKHeaders = [":method": "POST", ":scheme": "https", ":path": path, ":authority": "localhost"]
        for (name, value) in headers { head.add(name: name, value: value) }
        if body.isEmpty { return try await send([.headers(head, endStream: true)]) }
        return try await send([.headers(head, endStream: false), .data(body, endStream: true)])
    }

    /// Sends the steps on a new stream and waits for the response.
    public func send(_ steps: [Step]) async throws -> Response {
        let promise = channel.eventLoop.makePromise(of: Response.self)
        let streamPromise = channel.eventLoop.makePromise(of: (any Channel).self)
        multiplexer.createStreamChannel(promise: streamPromise) { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(ResponseCollector(promise: promise))
            }
        }
        let stream: any Channel
        do {
            stream = try await streamPromise.futureResult.get()
        } catch {
            promise.fail(error)  // no stream, so no handler will ever answer it
            throw error
        }
        let writes = stream.eventLoop.submit {
            for step in steps {
                switch step {
                case .headers(let headers, let endStream):
                    stream.write(
                        HTTP2Frame.FramePayload.headers(.init(headers: headers, endStream: endStream)), promise: nil)
                case .data(let bytes, let endStream):
                    let buffer = stream.allocator.buffer(bytes: bytes)
                    stream.write(
                        HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(buffer), endStream: endStream)),
                        promise: nil)
                case .reset(let code):
                    stream.write(HTTP2Frame.FramePayload.rstStream(code), promise: nil)
                }
            }
            stream.flush()
        }
        try await writes.get()
        return try await promise.futureResult.get()
    }

    public func close() async {
        try? await channel.close()
    }
}

/// Collects one stream's response.
private final class ResponseCollector: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload

    private let promise: EventLoopPromise<ProviderClient.Response>
    private var response = ProviderClient.Response(
        status: 0, headers: [], body: [], dataFrames: 0, endedOnHeaders: false)
    private var done = false

    init(promise: EventLoopPromise<ProviderClient.Response>) { self.promise = promise }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let headers):
            for (name, value, _) in headers.headers {
                if name == ":status" {
                    response.status = Int(value) ?? 0
                } else {
                    response.headers.append((name, value))
                }
            }
            if headers.endStream {
                response.endedOnHeaders = true
                finish(.success(response))
            }
        case .data(let data):
            response.dataFrames += 1
            if case .byteBuffer(let buffer) = data.data { response.body.append(contentsOf: buffer.readableBytesView) }
            if data.endStream { finish(.success(response)) }
        case .rstStream(let code):
            finish(.failure(ProviderClient.ClientError.streamReset(code)))
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(ProviderClient.ClientError.streamClosedWithoutResponse))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error))
    }

    private func finish(_ result: Result<ProviderClient.Response, any Error>) {
        guard !done else { return }
        done = true
        promise.completeWith(result)
    }
}
