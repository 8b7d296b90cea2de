import PushModel

/// Every number of the silent-push policy, with the defaults documented in docs/throttling.md.
public struct PolicySettings: Sendable, Equatable {
    /// Silent budget per (device, app): a token bucket.
    public var budgetCapacity: Int = 3
    /// One silent wake is refilled per this interval (Apple: "no more than two or three per hour").
    public var refillIntervalSeconds: Int64 = 20 * 60
    /// Which budgets a silent wake must fit: the per-app bucket above, the device-wide daily budget, or
    /// both (docs/throttling.md, "The throttle in the field").
    public var budgetModel: BudgetModel = .both
    /// Wakes a device's daily budget allows, shared by every app on it (Apple gives no number: "up to
    /// several background push notifications per hour across all apps" — three an hour, a day of them).
    public var deviceDailyCapacity: Int = 72
    /// An app the user has not launched for this many days is not woken (DTS: "if the user has not
    /// launched the app for a while"; Apple gives no number); 0: the rule is off.
    public var inactiveAppDays: Int = 14
    /// After a reboot the device's silent wakes wait this long (dasd's ThunderingHerdPolicy, about 300 s
    /// in logs quoted in the field); 0: off.
    public var herdSeconds: Int64 = 300

    /// A Live Activity's priority-10 updates in a burst (a token bucket per activity, named by its update
    /// token); over it an update is held for the next delivery window. Apple publishes no number.
    public var liveActivityCapacity: Int = 10
    /// One priority-10 Live Activity update is refilled per this interval.
    public var liveActivityRefillSeconds: Int64 = 6 * 60
    /// The same pair for an app with `NSSupportsLiveActivitiesFrequentUpdates` whose person has not turned
    /// them off (`frequentPushesEnabled`): Apple says only that the budget is higher.
    public var liveActivityFrequentCapacity: Int = 30
    public var liveActivityFrequentRefillSeconds: Int64 = 60

    /// Reloads a day a widget push (`widgets`, iOS 26's WidgetPushHandler) may trigger per (device, app):
    /// WidgetKit budgets a widget's reloads ("typically 40 to 70 refreshes a day" for a frequently viewed
    /// widget); whether pushes count Apple does not say. 0: not budgeted.
    public var widgetDailyBudget: Int = 70
    /// The same for control pushes (`controls`, iOS 18's ControlPushHandler): Apple documents no budget,
    /// so none by default (0); a number budgets them as widgets are.
    public var controlDailyBudget: Int = 0

    /// The daily budget of `type`'s reloads, or nil when it has none.
    func reloadBudget(for type: PushType) -> Int? {
        switch type {
        case .widgets: return widgetDailyBudget > 0 ? widgetDailyBudget : nil
        case .controls: return controlDailyBudget > 0 ? controlDailyBudget : nil
        default: return nil
        }
    }

    /// How many held pushes an app keeps: `newestOnly` keeps what APNs keeps (the newest silent push);
    /// `upTo(n)` keeps up to n (as FCM keeps up to 100), discarding the oldest beyond that.
    public var heldStorage: HeldStorage = .newestOnly
    /// Whether an alerting delivery carries the held pushes of every app on the device or only its own app's.
    public var alertPiggybackScope: PiggybackScope = .allApps

    /// How long the app has to call its completion handler after a background wake.
    public var completionDeadlineSeconds: Int64 = 30
    /// A completion this long after a missed deadline is still recorded as late; later ones are ignored.
    public var lateCompletionWindowSeconds: Int64 = 600
    /// A notification without `apns-expiration` is kept this long (APNs: up to 30 days).
    public var defaultStorageSeconds: Int64 = 30 * 86400

    /// Misbehaviour strikes: a missed deadline adds `missStrike`, a `failed` result `failedStrike`;
    /// timely `noData` and `newData` results take `noDataRelief` and `newDataRelief` away; strikes halve
    /// every `strikeHalfLifeSeconds`.
    public var missStrike: Double = 1
    public var failedStrike: Double = 0.25
    public var noDataRelief: Double = 0.25
    public var newDataRelief: Double = 0.5
    public var strikeHalfLifeSeconds: Int64 = 6 * 3600
    /// After a missed deadline the bucket is emptied and refills `coolingSlowdown` times slower for
    /// `coolingBaseSeconds × 2^(strikes − 1)`, at most `coolingMaxSeconds`.
    public var coolingBaseSeconds: Int64 = 30 * 60
    public var coolingMaxSeconds: Int64 = 24 * 3600
    public var coolingSlowdown: Double = 4

    public init() {}

    public enum HeldStorage: Sendable, Equatable {
        case newestOnly
        case upTo(Int)

        var limit: Int {
            switch self {
            case .newestOnly: return 1
            case .upTo(let count): return max(1, count)
            }
        }
    }

    public enum BudgetModel: String, Sendable, Equatable, CaseIterable {
        case perApp = "per_app"
        case deviceDaily = "device_daily"
        case both

        var perApp: Bool { self != .deviceDaily }
        var deviceDaily: Bool { self != .perApp }
    }

    public enum PiggybackScope: String, Sendable, Equatable, CaseIterable {
        case allApps = "all_apps"
        case sameApp = "same_app"
    }

    /// The size of a Live Activity's budget for priority-10 updates, by whether its app has frequent
    /// pushes: a token bucket per activity (named by its update token), `capacity` updates in a burst, one
    /// refilled every `refillSeconds`. Apple says only that "the system allows for a certain budget of
    /// ActivityKit push notifications per hour", that priority-10 ones count against it and priority-5
    /// ones do not, and that `NSSupportsLiveActivitiesFrequentUpdates` raises it; the sizes are not
    /// published, so both pairs are settings (docs/live-activities.md).
    public func liveActivityBudget(frequentPushes: Bool) -> TokenBucket.Rate {
        frequentPushes
            ? .init(capacity: liveActivityFrequentCapacity, refillSeconds: liveActivityFrequentRefillSeconds)
            : .init(capacity: liveActivityCapacity, refillSeconds: liveActivityRefillSeconds)
    }

    var refillIntervalMilliseconds: Double { Double(refillIntervalSeconds) * 1000 }
}
