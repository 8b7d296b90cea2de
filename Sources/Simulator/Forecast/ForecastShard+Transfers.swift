import DeviceRuntime
import GatewayCore
import PushModel
import PushPolicy

/// Transfers: computed from the link model, ended by an event at their end time.
extension ForecastShard {
    func startTransfer(_ device: Int, _ request: TransferRequest, from: Int64) {
        let size: Int64
        switch request.content {
        case .manifest: size = Int64(scenario.link.manifestBytes)
        case .item:
            let app = apps[Int(kindOf[device])][Int(request.app.index)]
            size = Int64(app.behaviour.itemBytes ?? scenario.itemBytes)
        }
        let from = min(from, size)
        let latency = scenario.link.latency(device: firstDevice + device, transfer: request.id, seed: scenario.seed)
        let endsAt =
            now + scenario.link.milliseconds(bytes: size - from, slowdown: request.slowdown, latency: latency)
        let running = Running(
            request: request, from: from, size: size, startedAt: now, endsAt: endsAt, latency: latency)
        // A resumed transfer keeps its id: it replaces the paused one's entry.
        if let index = runningIndex(device, request.id) {
            transfers[device][index] = running
        } else {
            transfers[device].append(running)
        }
        queue.schedule(
            at: endsAt, .transferEnd, target: UInt32(device), argument: Int32(truncatingIfNeeded: request.id))
    }

    func cancelTransfer(_ device: Int, _ id: Int) -> Int64? {
        guard let index = runningIndex(device, id) else { return nil }
        let running = transfers[device].remove(at: index)
        return running.from
            + scenario.link.bytes(
                after: now - running.startedAt, of: running.size - running.from, slowdown: running.request.slowdown,
                latency: running.latency)
    }

    func transferEnded(_ device: Int, id: Int, at time: Int64) {
        guard let index = runningIndex(device, id), transfers[device][index].endsAt == time else { return }
        let running = transfers[device].remove(at: index)
        let result: TransferResult
        switch running.request.content {
        case .manifest:
            // The server answers with what is newest when the request reaches it.
            let asked = running.startedAt + running.latency / 2
            result = .manifest(version: newestVersion(at: asked) ?? 0)
        case .item(let version):
            result = .item(version: version, bytes: running.size)
        }
        var background = false
        if case .background = running.request.session { background = true }
        ledger.recordTransfer(
            background: background, bytes: running.size - running.from, milliseconds: time - running.startedAt,
            succeeded: true, profileIndex: ledgerIndex[Int(kindOf[device])])
        deviceEvent(device, .transferFinished(id: id, result: result))
    }

    /// The newest version published at or before `at` (versions are numbered from 1 in publish order).
    func newestVersion(at: Int64) -> Int? {
        let count = publishTimes.countAtOrBefore(at)
        return count == 0 ? nil : count
    }

    func runningIndex(_ device: Int, _ id: Int) -> Int? {
        transfers[device].firstIndex { $0.request.id == id }
    }

    /// The slot of app `bundleID` on `device` (a device has a handful: scanned).
    func slot(of bundleID: String, _ device: Int) -> AppSlot? {
        apps[Int(kindOf[device])].firstIndex { $0.bundleID == bundleID }.map(AppSlot.init)
    }
}

/// A device's transfers in a forecast: computed from the link model, ended by an event at their end time.
struct ShardLink: TransferLink {
    // unowned(unsafe): a link is made for one call into the iPhone, by the shard itself, and dropped
    // before that call returns, so the shard outlives it; a strong reference cost a retain and a
    // release per event.
    unowned(unsafe) let shard: ForecastShard
    let device: Int

    mutating func start(_ request: TransferRequest, from: Int64, at now: UnixTime) {
        shard.startTransfer(device, request, from: from)
    }

    mutating func cancel(_ id: Int, at now: UnixTime) -> Int64? {
        shard.cancelTransfer(device, id)
    }
}
