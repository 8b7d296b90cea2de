import NIOCore
import NIOHPACK
import ProviderAuth
import PushModel
import TestSupport
import Testing

@testable import ProviderAPI

/// The provider token a connection repeats, decoded once: where the locator finds it in a block, what the
/// state machine elides and substitutes, and — over real h2c — that every answer is the one the same
/// requests get when nothing can be elided.
@Suite struct RepeatedTokenFieldTests {
    static let token = "bearer " + String(repeating: "eyJhbGciOiJFUzI1NiIsImtpZCI6IktFWTEyMzQ1NjcifQ.", count: 4)

    static func fields(_ token: String = token) -> [(String, String)] {
        [
            (":method", "POST"), (":scheme", "https"), (":path", "/3/device/abab"), ("apns-topic", "com.example.app"),
            ("authorization", token), ("apns-priority", "5"),
        ]
    }

    static func block(_ fields: [(String, String)], _ indexing: HPACKIndexing, encoder: inout HPACKEncoder) -> [UInt8] {
        var headers = HPACKHeaders()
        for (name, value) in fields { headers.add(name: name, value: value, indexing: indexing) }
        var buffer = ByteBuffer()
        try! encoder.encode(headers: headers, to: &buffer)
        return Array(buffer.readableBytesView)
    }

    static func decode(_ block: [UInt8], decoder: inout HPACKDecoder) throws -> [(String, String)] {
        var buffer = ByteBuffer(bytes: block)
        return try decoder.decodeHeaders(from: &buffer).map { ($0.name, $0.value) }
    }

    static func locate(_ block: [UInt8]) -> (field: Int, literal: Range<Int>)? {
        block.withUnsafeBytes { RepeatedTokenField.locate(in: $0) }
    }

    /// Never indexed or without indexing, the token is found at its place; an empty literal in its place
    /// decodes to the same fields with an empty token, and leaves HPACK's tables as they were (the next
    /// block, indexed against them, still decodes).
    @Test(arguments: [HPACKIndexing.nonIndexable, .neverIndexed])
    func findsTheTokenAndItsLiteral(_ indexing: HPACKIndexing) throws {
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var plain = HPACKDecoder(allocator: ByteBufferAllocator())
        for round in 0..<3 {
            // Everything but the token indexed, so that later blocks refer to the dynamic table.
            var headers = HPACKHeaders()
            for (name, value) in Self.fields() {
                headers.add(name: name, value: value, indexing: name == "authorization" ? indexing : .indexable)
            }
            var buffer = ByteBuffer()
            try encoder.encode(headers: headers, to: &buffer)
            let block = Array(buffer.readableBytesView)
            let (field, literal) = try #require(Self.locate(block))
            #expect(field == 4, "round \(round)")
            var elided = block
            elided.replaceSubrange(literal, with: [0])
            var expected = Self.fields()
            expected[4].1 = ""
            #expect(try Self.decode(elided, decoder: &decoder).elementsEqual(expected) { $0 == $1 })
            #expect(try Self.decode(block, decoder: &plain).elementsEqual(Self.fields()) { $0 == $1 })
        }
    }

    /// Indexed incrementally, the token is in the dynamic table after the first block: nothing to elide.
    /// Nor is a token whose name is sent as a literal, or a block without one.
    @Test func leavesOtherRepresentationsAlone() {
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        #expect(Self.locate(Self.block(Self.fields(), .indexable, encoder: &encoder)) == nil)
        let literalName: [UInt8] = [0x10, 13] + Array("authorization".utf8) + [3] + Array("abc".utf8)
        #expect(Self.locate(literalName) == nil)
        #expect(Self.locate([0x82, 0x87]) == nil)
        #expect(Self.locate([]) == nil)
    }

    /// A dynamic table size update is no field; a field's index past the prefix still counts.
    @Test func countsFieldsAfterATableSizeUpdate() throws {
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        let block = Self.block([(":method", "POST"), ("authorization", "bearer x")], .nonIndexable, encoder: &encoder)
        // 001 11111, then 4096 - 31 = 4065 in 7-bit groups.
        let updated: [UInt8] = [0x3F, 0xE1, 0x1F] + block
        let (field, literal) = try #require(Self.locate(updated))
        #expect(field == 1)
        #expect(literal.upperBound == updated.count)
    }

    /// Every prefix of a block, and random bytes: a range inside the bytes or nil, never a crash.
    @Test func truncatedOrRandomBlocksAreSafe() {
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        let block = Self.block(Self.fields(), .nonIndexable, encoder: &encoder)
        for end in 0..<block.count {
            let prefix = Array(block[..<end])
            if let (_, literal) = Self.locate(prefix) { #expect(literal.upperBound <= end) }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0..<64, using: &generator)).map { _ in UInt8.random(in: 0...255) }
            if let (_, literal) = Self.locate(bytes) { #expect(literal.upperBound <= bytes.count) }
        }
    }

    // MARK: The state machine

    /// A block of literals without indexing with `token` on `stream`, as the codec plans it: the range to
    /// replace.
    func plan(_ state: inout RepeatedTokenField, stream: Int32, token: String = token) -> Range<Int>? {
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        let block = Self.block(Self.fields(token), .nonIndexable, encoder: &encoder)
        return block.withUnsafeBytes { state.plan(stream: stream, block: $0) }
    }

    /// The value the codec hands on for a field the session decoded (nil: the one received).
    func value(
        _ state: inout RepeatedTokenField, stream: Int32, field: Int = 4, name: String = "authorization",
        received: [UInt8]
    ) -> String? {
        var name = name
        return name.withUTF8 { name in
            received.withUnsafeBufferPointer { state.value(stream: stream, field: field, name: name, received: $0) }
        }.map { String(decoding: $0, as: UTF8.self) }
    }

    func value(
        _ state: inout RepeatedTokenField, stream: Int32, field: Int = 4, name: String = "authorization",
        received: String
    ) -> String? {
        value(&state, stream: stream, field: field, name: name, received: Array(received.utf8))
    }

    /// What the session decodes in an elided field's place: the marker.
    func marker(_ state: RepeatedTokenField) -> [UInt8] { Array(state.replacement.dropFirst()) }

    /// The first token is decoded by the session and learned at the end of its read; from the next read on,
    /// the same octets are replaced by the marker, which reads as the token.
    @Test func learnsATokenThenElidesIt() throws {
        var state = RepeatedTokenField()
        #expect(state.replacement.count == 9 && state.replacement[0] == 8)
        #expect(plan(&state, stream: 1) == nil)
        #expect(value(&state, stream: 1, field: 3, name: "apns-topic", received: "com.example.app") == nil)
        #expect(value(&state, stream: 1, received: Self.token) == nil)
        // Not yet: learned when the read is done.
        #expect(plan(&state, stream: 3) == nil)
        #expect(value(&state, stream: 3, received: marker(state)) == nil)
        state.finishRead()
        let range = try #require(plan(&state, stream: 5))
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        #expect(range == Self.locate(Self.block(Self.fields(), .nonIndexable, encoder: &encoder))?.literal)
        #expect(plan(&state, stream: 7) != nil)
        #expect(value(&state, stream: 5, received: marker(state)) == Self.token)
        #expect(value(&state, stream: 7, received: marker(state)) == Self.token)
        // The marker is the token's only under its name.
        #expect(value(&state, stream: 7, field: 3, name: "apns-topic", received: marker(state)) == nil)
        #expect(value(&state, stream: 7, received: "bearer other") == nil)
        state.finishRead()
    }

    /// A new token is learned; a field elided in the same read against the token before still reads as
    /// that one; after the read, the old token's octets are no longer recognised.
    @Test func aNewTokenReplacesTheOldAtTheEndOfTheRead() {
        let other = Self.token + "2"
        var state = RepeatedTokenField()
        _ = plan(&state, stream: 1)
        _ = value(&state, stream: 1, received: Self.token)
        state.finishRead()
        #expect(plan(&state, stream: 3, token: other) == nil)
        #expect(plan(&state, stream: 5) != nil)
        #expect(value(&state, stream: 3, received: other) == nil)
        #expect(value(&state, stream: 5, received: marker(state)) == Self.token)
        state.finishRead()
        #expect(plan(&state, stream: 7) == nil)
        #expect(plan(&state, stream: 9, token: other) != nil)
        #expect(value(&state, stream: 9, received: marker(state)) == other)
    }

    /// A token is learned only from the first block of a new stream (a later block on a stream — its
    /// trailers, or one after a block the codec could not read — might not be the one the session decodes
    /// at that place), and only from the field located; a candidate the session never decoded (a stream
    /// it ignored) teaches nothing.
    @Test func learnsOnlyFromTheFirstBlockOfANewStream() {
        var state = RepeatedTokenField()
        // A block on stream 1 the codec could not read (CONTINUATION, say), then one it could.
        #expect(state.plan(stream: 1, block: nil) == nil)
        #expect(plan(&state, stream: 1) == nil)
        _ = value(&state, stream: 1, received: Self.token)
        state.finishRead()
        #expect(plan(&state, stream: 3) == nil)
        // Another field at another place, then the one located.
        _ = value(&state, stream: 3, field: 2, received: "bearer elsewhere")
        state.finishRead()
        #expect(plan(&state, stream: 5) == nil)
        state.finishRead()
        #expect(plan(&state, stream: 7) == nil)
        _ = value(&state, stream: 7, received: Self.token)
        state.finishRead()
        #expect(plan(&state, stream: 9) != nil)
    }

    /// Every connection draws its own marker.
    @Test func markersDiffer() {
        let markers = Set((0..<64).map { _ in RepeatedTokenField().replacement })
        #expect(markers.count == 64)
    }

    // MARK: Over real h2c

    /// Provider tokens that change between requests (valid, of another key, of no key, of another team),
    /// each request answered before the next is sent (so the token of one read is known in the next), then
    /// all at once: never indexed (the token elided once known) and indexed incrementally (never elided),
    /// each on its own connection, answer alike, request by request — status and body.
    @Test func everyAnswerIsTheOneTheTokenGetsWithoutElision() async throws {
        try await TestGateway.with { gateway in
            let signers = [
                Fixture.main, Fixture.main, Fixture.main, Fixture.unregisteredKey, Fixture.main, Fixture.second,
                Fixture.second, Fixture.main, Fixture.otherTeamKey, Fixture.main, Fixture.main,
            ]
            let path = "/3/device/\(Fixture.token.hex)"
            // Each signer's token made once, and sent again as a backend does (a signature differs each time).
            let bearers = Dictionary(
                [Fixture.main, Fixture.second, Fixture.unregisteredKey, Fixture.otherTeamKey].map {
                    ($0.keyID, gateway.bearer($0))
                }, uniquingKeysWith: { first, _ in first })
            func answers(_ indexing: HPACKIndexing) async throws -> [String] {
                let client = try await gateway.rawClient()
                var stream: UInt32 = 1
                func send(_ signer: ProviderTokenSigner) async throws {
                    let fields = gateway.rawRequest(path: path, extra: []).map { field in
                        field.0 == "authorization" ? (field.0, bearers[signer.keyID]!) : field
                    }
                    try await client.headers(stream: stream, fields, endStream: false, indexing: indexing)
                    try await client.data(stream: stream, alertPayload, endStream: true)
                    stream += 2
                }
                func answered(_ count: Int) async throws {
                    _ = try await client.waitFor { frames in
                        frames.filter { $0.type == RawHTTP2.Frame.headersType }.count >= count || client.isClosed
                    }
                }
                for (index, signer) in signers.enumerated() {
                    try await send(signer)
                    try await answered(index + 1)
                }
                for signer in signers { try await send(signer) }
                try await answered(2 * signers.count)
                let frames = client.frames
                await client.close()
                return (0..<(2 * signers.count)).map { index in
                    let id = UInt32(1 + 2 * index)
                    let status = frames.first { $0.type == RawHTTP2.Frame.headersType && $0.stream == id }?.status
                    let body = frames.filter { $0.type == RawHTTP2.Frame.data && $0.stream == id }.flatMap(\.payload)
                    return "\(id): \(status ?? "none") \(String(decoding: body, as: UTF8.self))"
                }
            }
            let elided = try await answers(.nonIndexable)
            let indexed = try await answers(.indexable)
            #expect(elided == indexed)
            // The requests themselves got what their tokens deserve (not all one answer).
            #expect(elided.contains { $0.contains(" 200 ") || $0.hasSuffix(" 200 ") })
            #expect(elided.contains { $0.contains(" 403 ") })
        }
    }
}
