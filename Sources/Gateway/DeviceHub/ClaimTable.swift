import PushPolicy

/// Which devices this node is claiming, and the work that waits for each claim, as a pure state
/// machine (the hub keeps it under a lock; the work is opaque to it). Every push for a device under
/// claim is decided after the claim, whichever arrives first:
/// - `place` for a device under claim answers nil (the caller then `wait`s its work for the claim);
///   otherwise it says where the device's policy runs (here, or on its owner);
/// - `begin` starts a claim (only the first of concurrent claims of one device does the store work;
///   the others wait with the pushes);
/// - `finish` ends it and hands back everything that waited, in the order it came.
struct ClaimTable<Work> {
    enum Placement: Equatable {
        case here
        case elsewhere(String)
    }

    private var waiting: [DeviceSlot: [Work]] = [:]

    func isClaiming(_ device: DeviceSlot) -> Bool { waiting[device] != nil }

    /// Where `device`'s policy runs, given its recorded owner and this node's name; nil while it is being
    /// claimed here (the work then `wait`s for the claim).
    func place(_ device: DeviceSlot, owner: String?, me: String?) -> Placement? {
        if waiting[device] != nil { return nil }
        guard let owner, owner != me else { return .here }
        return .elsewhere(owner)
    }

    /// Keeps `work` for when the claim of `device` under way is done.
    mutating func wait(_ device: DeviceSlot, _ work: Work) {
        waiting[device, default: []].append(work)
    }

    /// Starts a claim of `device` with `work` to run after it; true if this is the first (the caller
    /// claims it in the store), false if a claim is already under way (the work waits for that one).
    mutating func begin(_ device: DeviceSlot, then work: Work) -> Bool {
        if waiting[device] != nil {
            waiting[device]!.append(work)
            return false
        }
        waiting[device] = [work]
        return true
    }

    /// The claim of `device` is over: what waited for it, in order.
    mutating func finish(_ device: DeviceSlot) -> [Work] {
        waiting.removeValue(forKey: device) ?? []
    }
}

extension ClaimTable: Sendable where Work: Sendable {}
