/// How one broadcast fanned out on a node, as `GET /v1/broadcasts` gives it (the gateway measures it,
/// `pushgate bench` reports it): subscribers it was written to and acknowledged by, and the time from
/// its 200 (the broadcast stored) to the first, median, 99th-percentile and last acknowledgement.
public struct BroadcastFanout: Codable, Sendable, Equatable {
    public var apnsID: String
    public var channelID: String
    public var sequence: Int64
    /// Written to subscribers connected to this node when it was fanned out.
    public var written: Int
    public var acknowledged: Int
    /// Milliseconds from the stored broadcast to its acknowledgements (nil: none yet).
    public var firstMilliseconds: Double?
    public var medianMilliseconds: Double?
    public var p99Milliseconds: Double?
    public var lastMilliseconds: Double?
    /// Milliseconds the fan-out's writes took on this node, from the commit to the last slice (nil: still
    /// being written).
    public var fanoutMilliseconds: Double?

    public init(apnsID: String, channelID: String, sequence: Int64, written: Int = 0, acknowledged: Int = 0) {
        self.apnsID = apnsID
        self.channelID = channelID
        self.sequence = sequence
        self.written = written
        self.acknowledged = acknowledged
    }

    /// Written to every subscriber and acknowledged by each.
    public var isComplete: Bool { fanoutMilliseconds != nil && acknowledged >= written }
}
