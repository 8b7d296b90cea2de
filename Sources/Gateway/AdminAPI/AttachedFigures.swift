import Synchronization

/// Figures from outside the gateway that its admin port shows beside its own: a simulated fleet running
/// in the same process (`pushgate demo`) attaches its freshness here. `/v1/fleet` serves its JSON,
/// `/metrics` appends its Prometheus text, and the dashboard draws its table when it is there. The
/// gateway knows nothing of what the figures mean.
public final class AttachedFigures: Sendable {
    public struct Source: Sendable {
        /// The JSON `/v1/fleet` answers.
        public var json: @Sendable () -> String
        /// Prometheus text appended to `/metrics` (its own metric names).
        public var metrics: @Sendable () -> String

        public init(json: @escaping @Sendable () -> String, metrics: @escaping @Sendable () -> String) {
            self.json = json
            self.metrics = metrics
        }
    }

    private let source = Mutex<Source?>(nil)

    public init() {}

    public func attach(_ source: Source) { self.source.withLock { $0 = source } }
    public func detach() { source.withLock { $0 = nil } }
    var current: Source? { source.withLock { $0 } }
}
