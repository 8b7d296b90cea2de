import DeviceRuntime
import PushModel
import PushPolicy

/// Everything a forecast runs: the fleet (kinds of iPhone and their counts, as `pushgate simulate`
/// builds it), the span, the content's publications, the gateway's policy, the devices' keep-alives,
/// the transfers' link, and the seed. The report prints it, so a result can be reproduced from it.
public struct ForecastScenario: Sendable, Equatable {
    public struct Kind: Sendable, Equatable {
        public var name: String
        public var profile: IPhoneProfile
        public var devices: Int

        public init(name: String, profile: IPhoneProfile, devices: Int) {
            self.name = name
            self.profile = profile
            self.devices = devices
        }
    }

    public var kinds: [Kind]
    /// Virtual time starts here (users' habits are times of day, UTC).
    public var start: UnixTime
    public var hours: Double
    public var publications: PublicationSchedule
    public var policy: PolicySettings
    /// The keep-alive interval the gateway gives devices (`devices.keep_alive_seconds`), and each
    /// device's jitter (the agent's).
    public var keepAliveSeconds: Int
    public var keepAliveJitter: Double = 0.1
    public var link: LinkModel
    /// An item's size when the app names none (the content server's `--item-bytes`).
    public var itemBytes: Int
    /// Device i (in the order of the kinds) is seeded `seed + i`, as in `pushgate simulate`.
    public var seed: UInt64
    /// Devices (fleet-wide indexes) whose every event is written to the trace.
    public var traced: Set<Int> = []
    /// When each device (fleet order) first connects and its runtime starts, in ms: a replay of a real
    /// run, whose devices are made at `start` and connect one by one. Nil: every device at the start.
    public var connectedAt: [Int64]?
    /// The backends' fan-out: each publication's pushes reach the gateway spread evenly over this many
    /// seconds after it, device by device in fleet order (0: all at the publication). A replay takes it
    /// from the real run's announcements (`ContentAnnouncer.Outcome`); a what-if, from a backend's rate.
    public var announcementSeconds: Double = 0
    /// A replay's fan-outs, publication by publication (the real run's first took longest: its pushes
    /// found every app without a wake yet); a publication beyond its end takes `announcementSeconds`.
    public var announcementSecondsEach: [Double] = []
    /// The users do nothing at or after this instant (a replayed run's planned end); nil: until the end.
    public var usersUntil: UnixTime?

    public init(
        kinds: [Kind], start: UnixTime, hours: Double, publications: PublicationSchedule,
        policy: PolicySettings = PolicySettings(), keepAliveSeconds: Int = 60, link: LinkModel = LinkModel(),
        itemBytes: Int = 200_000, seed: UInt64 = 1
    ) {
        self.kinds = kinds
        self.start = start
        self.hours = hours
        self.publications = publications
        self.policy = policy
        self.keepAliveSeconds = keepAliveSeconds
        self.link = link
        self.itemBytes = itemBytes
        self.seed = seed
    }

    public var devices: Int { kinds.map(\.devices).reduce(0, +) }
    public var end: UnixTime { start.adding(milliseconds: Int64(hours * 3_600_000)) }

    /// A ledger that folds each open against this scenario's publications, hour by hour over its span.
    func ledger() -> FreshnessLedger {
        FreshnessLedger(
            publishTimes: publications.times(from: start, until: end), start: start.milliseconds,
            hours: Int(hours.rounded(.up)))
    }

    /// The midnight (UTC) at or before `time`: a forecast's default start, so that a day is a day.
    public static func midnight(before time: UnixTime) -> UnixTime {
        UnixTime(milliseconds: time.milliseconds - time.milliseconds % 86_400_000)
    }
}

/// When versions of the content are published: one at the start (the content server's first, which no
/// backend announces: the devices have no tokens yet in a real run), then one every `everySeconds`,
/// within the hours of the day `hours` allows (UTC; nil: round the clock). Each after the first is
/// announced with each app's pushes.
public struct PublicationSchedule: Sendable, Equatable {
    public var everySeconds: Double
    /// Hours of the day (UTC, start inclusive, end exclusive; the end may be below the start to wrap
    /// past midnight) when publications happen.
    public var hours: (start: Double, end: Double)?
    /// Explicit publish times (ms), replacing the rule above (a validation replays a real run's).
    public var times: [Int64]?

    public init(everySeconds: Double, hours: (start: Double, end: Double)? = nil) {
        self.everySeconds = everySeconds
        self.hours = hours
    }

    public static func == (a: PublicationSchedule, b: PublicationSchedule) -> Bool {
        a.everySeconds == b.everySeconds && a.hours?.start == b.hours?.start && a.hours?.end == b.hours?.end
            && a.times == b.times
    }

    /// Publish times from `start` until `end` (exclusive), the first at `start`.
    public func times(from start: UnixTime, until end: UnixTime) -> [Int64] {
        if let times { return times.filter { $0 < end.milliseconds } }
        var result = [start.milliseconds]
        guard everySeconds > 0 else { return result }
        let step = max(1, Int64(everySeconds * 1000))
        var at = start.milliseconds + step
        while at < end.milliseconds {
            if allows(at) { result.append(at) }
            at += step
        }
        return result
    }

    func allows(_ at: Int64) -> Bool {
        guard let hours else { return true }
        let hour = Double(at % 86_400_000) / 3_600_000
        return hours.start <= hours.end
            ? (hour >= hours.start && hour < hours.end) : (hour >= hours.start || hour < hours.end)
    }
}
