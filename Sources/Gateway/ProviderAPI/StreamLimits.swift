/// The two limits of a provider connection that are answered per stream, and the connection-level
/// ceilings the codec's session enforces above them.
///
/// A session enforces exactly what it advertises, and what it enforces ends the connection, or refuses a
/// stream without an answer the client can act on. RFC 9113 lets a server refuse one stream instead
/// (§5.1.2: a stream error of type REFUSED_STREAM, which the client may retry; §10.5.1: a 431 response).
/// So the session is given ceilings above the configured limits, the provider is told the configured
/// limits (`AdvertisedSettings` rewrites the values in the connection's first SETTINGS frame), and the
/// connection handler answers a stream over a configured limit on that stream alone. A peer that goes past
/// a ceiling still loses its connection.
public struct StreamLimits: Sendable, Equatable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS as advertised; a stream over it is refused with REFUSED_STREAM.
    public var concurrentStreams: Int
    /// SETTINGS_MAX_HEADER_LIST_SIZE as advertised; a request over it is answered 431.
    public var headerListSize: Int

    public init(concurrentStreams: Int, headerListSize: Int) {
        self.concurrentStreams = concurrentStreams
        self.headerListSize = headerListSize
    }

    /// Open streams past which the session ends the connection: room for a client that races the limit (or
    /// ignores it) to be refused stream by stream.
    public var concurrentStreamsCeiling: Int { max(2 * concurrentStreams, concurrentStreams + 100) }

    /// The header list the session still decodes (so its HPACK table stays in step with the client's) for
    /// the handler to answer 431.
    public var headerListCeiling: Int { max(4 * headerListSize, 64 * 1024) }
}
