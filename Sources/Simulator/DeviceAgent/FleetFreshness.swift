import DeviceRuntime
import PushModel
import Synchronization

/// What a fleet of iPhones did, kept as it happens (every runtime action and every ended transfer, in
/// one `FreshnessLedger`), and the freshness report made from it against the content's publish times.
public final class FleetFreshness: Sendable {
    public struct Kind: Sendable {
        public var name: String
        public var profile: IPhoneProfile
        public var devices: Int
    }

    public let kinds: [Kind]
    public let startedAt: UnixTime
    // The devices record from every event loop; an append under a lock of its own (no I/O under it).
    private let ledger = Mutex(FreshnessLedger())

    public init(mix: [(name: String, profile: IPhoneProfile, devices: Int)], startedAt: UnixTime) {
        kinds = mix.map { Kind(name: $0.name, profile: $0.profile, devices: $0.devices) }
        self.startedAt = startedAt
    }

    func record(_ action: RuntimeAction, at now: UnixTime, profile: String) {
        switch action {
        case .appState, .complete, .cancelTransfer, .pauseTransfer, .resumeTransfer, .moveToBackgroundSession,
            .conditions:
            return
        default: ledger.withLock { $0.record(action, at: now, profile: profile) }
        }
    }

    func recordTransfer(_ figures: RuntimeShell.TransferFigures, profile: String) {
        ledger.withLock {
            $0.recordTransfer(
                background: figures.background, bytes: figures.bytes, milliseconds: figures.milliseconds,
                succeeded: figures.succeeded, profile: profile)
        }
    }

    /// Opens so far.
    public var opens: Int { ledger.withLock { $0.openCount } }

    /// The report at `now`, against `versions` (number → publish time, ms): per kind of iPhone with its
    /// strategy, and for all.
    public func report(versions: [Int: Int64], now: UnixTime) -> FreshnessReport {
        let ledger = self.ledger.withLock { $0 }
        let hours = Double(max(1, now.milliseconds - startedAt.milliseconds)) / 3_600_000
        var installs: [String: Int] = [:]
        for kind in kinds { installs[kind.name, default: 0] += kind.devices * kind.profile.apps.count }
        var report = ledger.report(versions: versions, hours: hours, apps: installs)
        for index in report.rows.indices {
            guard let kind = kinds.first(where: { $0.name == report.rows[index].profile }) else { continue }
            report.rows[index].strategy = kind.profile.strategy
        }
        return report
    }

}
