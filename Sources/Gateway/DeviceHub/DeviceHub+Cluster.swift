import DeviceProtocol
import JobQueue
import Logging
import NIOCore
import PushIntake
import PushModel
import PushPolicy
import PushStore
import Synchronization

/// Several nodes on one PostgreSQL database. Each device's policy runs on one node, its owner (the node
/// it registered on or last connected to), so its budget and held pushes are in one place:
/// - a push accepted by another node is handed to the owner over the node link (`RouteLink`), which runs
///   the policy for it and stores it with its decision before the accepting node answers its provider;
///   one the link does not take is stored by the accepting node with a `route` notice, through which the
///   owner loads and runs it;
/// - a device connecting to a node that does not own it is claimed first: the node records itself as
///   owner (an `owner` notice tells the others), loads the device's budgets and pending notifications,
///   and only then lets the device in; pushes for it meanwhile wait for the claim;
/// - the node that lost the device drops its state for it and hands its held pushes to the new owner.
extension DeviceHub: RouteIntake {
    typealias Placement = ClaimTable<@Sendable (Bool) -> Void>.Placement

    /// Where the device's policy runs; nil while this node is claiming it, and then the work `deferring`
    /// makes (only then) is kept for when the claim is done (called with whether it succeeded).
    func place(_ device: DeviceSlot, orDefer deferring: () -> @Sendable (Bool) -> Void) -> Placement? {
        withClaims { claims in
            // The owner is read under the claims' lock: a claim finishing records its owner before it ends.
            guard let placement = claims.place(device, owner: registry.owner(of: device), me: registry.nodeID) else {
                claims.wait(device, deferring())
                return nil
            }
            return placement
        }
    }

    func submitInCluster(_ notification: PushNotification, device: DeviceSlot, on eventLoop: any EventLoop)
        -> IntakeReply
    {
        var waiting: EventLoopFuture<IntakeResult>?
        let placement = place(device) {
            let promise = eventLoop.makePromise(of: IntakeResult.self)
            waiting = promise.futureResult
            return { [self] _ in
                // Decided again once the claim is over: here if it succeeded, with the old owner if not.
                switch submit(notification, on: eventLoop) {
                case .now(let result): promise.succeed(result)
                case .later(let future): future.cascade(to: promise)
                case .afterCommit(let future): future.map { .accepted }.cascade(to: promise)
                }
            }
        }
        switch placement {
        case nil:
            return .later(waiting!)
        case .here:
            return submitHere(notification, device: device, on: eventLoop)
        case .elsewhere(let node):
            core.withLock { $0.counters.routedOut += 1 }
            guard writer != nil else { return .now(.rejected(Rejection(.serviceUnavailable))) }
            let stored = StoredNotification(
                notification: notification, expiresAt: policy.expiry(of: notification),
                deviceID: registry.deviceID(of: device), state: .pending, rule: nil)
            guard let link = routeLink.withLock({ $0 }), let deviceID = stored.deviceID else {
                return .afterCommit(storeAndRoute(stored, device: device, to: node, on: eventLoop))
            }
            // Run and stored by the owner, whose answer comes once its commit is durable (the 200 says so);
            // a push the link does not take is stored here and handed over through the store.
            let answer = eventLoop.makePromise(of: IntakeResult.self)
            let push = RoutedPush(
                notification: notification, deviceID: deviceID, expiresAt: stored.expiresAt, stored: false)
            link.forward(push, to: node, answeringOn: eventLoop) { [self] outcome in
                switch outcome {
                case .taken:
                    // A claim of the device here that began meanwhile may have read its pending pushes
                    // before the owner's commit: this node runs it too (once, `adopted`; the device keeps
                    // the first of an apns-id it is sent twice).
                    if claimedHere(device) { routed(stored, device: device) }
                    answer.succeed(.accepted)
                case .refused(let reason):
                    answer.succeed(.rejected(Rejection(reason)))
                case .untaken:
                    core.withLock { $0.counters.routedThroughStore += 1 }
                    storeAndRoute(stored, device: device, to: node, on: eventLoop).map { .accepted }
                        .cascade(to: answer)
                }
            }
            return .later(answer.futureResult)
        }
    }

    /// Stores a push for a device `node` runs with a `route` notice in the same commit (the owner loads it
    /// from the store and runs it): where there is no link to the node, or the link did not take it.
    private func storeAndRoute(
        _ stored: StoredNotification, device: DeviceSlot, to node: String, on eventLoop: any EventLoop
    ) -> EventLoopFuture<Void> {
        guard let writer else { return eventLoop.makeFailedFuture(Rejection(.serviceUnavailable)) }
        let committed = writer.enqueue(answeringOn: eventLoop) {
            $0.notifications.append(stored)
            $0.notices.append(Self.route(stored.notification, of: stored.deviceID, to: node))
        }
        committed.whenSuccess { [self] in
            // A claim of the device that began meanwhile may have read its pending pushes before this one
            // was committed, and the old owner may be gone: this node runs it after the claim (once,
            // whichever way it arrives first).
            if claimedHere(device) { routed(stored, device: device) }
        }
        return committed
    }

    /// Whether this node is claiming `device` or owns it now.
    private func claimedHere(_ device: DeviceSlot) -> Bool {
        withClaims { $0.isClaiming(device) } || registry.owner(of: device) == registry.nodeID
    }

    /// Hands a push stored here to `node`, its device's owner: over the node link, or through the store
    /// (a `route` notice with the next commit) when there is no link or it did not take the push.
    func hand(_ stored: StoredNotification, to node: String) {
        let notice = Self.route(stored.notification, of: stored.deviceID, to: node)
        guard let link = routeLink.withLock({ $0 }), let deviceID = stored.deviceID else {
            writer?.enqueue { $0.notices.append(notice) }
            return
        }
        let push = RoutedPush(
            notification: stored.notification, deviceID: deviceID, expiresAt: stored.expiresAt, stored: true)
        link.forward(push, to: node, answeringOn: nil) { [self] outcome in
            guard outcome != .taken else { return }
            core.withLock { $0.counters.routedThroughStore += 1 }
            writer?.enqueue { $0.notices.append(notice) }
        }
    }

    /// The nodes this node's routed pushes can reach over a link (`/v1/counters`).
    public var linkedNodes: [String] { routeLink.withLock { $0 }?.linkedNodes ?? [] }

    /// Routed pushes go over `link` from now on (`GatewayServices`, once the fleet's secret is read).
    public func route(through link: any RouteLink) {
        routeLink.withLock { $0 = link }
    }

    static func route(_ push: PushNotification, of deviceID: String?, to node: String) -> ClusterNotice {
        .route(node: node, apnsID: push.id.value, teamID: push.teamID ?? "", deviceID: deviceID ?? "")
    }

    /// Whether device `deviceID` is this node's now: it owns it, or is claiming it.
    private func ownsOrClaims(_ deviceID: String) -> Bool {
        guard !deviceID.isEmpty, let device = registry.slot(ofDevice: deviceID) else { return false }
        return withClaims { $0.isClaiming(device) } || registry.owner(of: device) == registry.nodeID
    }

    /// Takes the device over from the node that owned it; `then` runs once its state is loaded (with
    /// true) or the claim failed (false). Claims are made in batches: those that arrive while one
    /// transaction runs go together in the next (a node's loss sends thousands of devices to the others
    /// within a second, each of which waits for its claim before its hello is answered).
    func claim(_ device: DeviceSlot, then work: @escaping @Sendable (Bool) -> Void) {
        let first = withClaims { $0.begin(device, then: work) }
        guard first, cluster != nil else { return }
        let start = withClaimQueue { queue -> Bool in
            queue.devices.append(device)
            defer { queue.draining = true }
            return !queue.draining
        }
        guard start, !spawn({ [self] in await drainClaims() }) else { return }
        // After shutdown: every claim queued fails, and what waited for it is decided without it.
        let refused = withClaimQueue { queue in
            defer { queue = ([], false) }
            return queue.devices
        }
        for device in refused { finishClaim(device, claimed: false) }
    }

    /// The most devices claimed in one transaction.
    static let claimBatchLimit = 1_000

    /// Claims the queued devices, a batch at a time in one transaction each, until none is left.
    private func drainClaims() async {
        guard let cluster else { return }
        while true {
            let devices = withClaimQueue { queue -> [DeviceSlot] in
                let batch = Array(queue.devices.prefix(Self.claimBatchLimit))
                queue.devices.removeFirst(batch.count)
                if batch.isEmpty { queue.draining = false }
                return batch
            }
            guard !devices.isEmpty else { return }
            let deviceIDs = devices.map { registry.deviceID(of: $0) }
            var claimed: [String: ClaimedDevice] = [:]
            do {
                claimed = try await cluster.claim(deviceIDs: deviceIDs.compactMap { $0 })
            } catch {
                logger.error(
                    "devices not claimed",
                    metadata: ["count": "\(devices.count)", "error": "\(String(reflecting: error))"])
            }
            core.withLock { $0.counters.claimed += claimed.count }
            for (device, deviceID) in zip(devices, deviceIDs) {
                guard let deviceID, let state = claimed[deviceID] else {
                    finishClaim(device, claimed: false)
                    continue
                }
                let taken = take(device, deviceID: deviceID, state, owner: cluster.nodeID)
                logger.debug(
                    "device claimed",
                    metadata: [
                        "device": "\(deviceID)", "from": "\(state.previousOwner ?? "-")",
                        "pending": "\(state.pending.count)", "taken": "\(taken)",
                    ])
                finishClaim(device, claimed: taken)
            }
        }
    }

    /// The claim of `device` is over: what waited for it runs, told whether it succeeded.
    private func finishClaim(_ device: DeviceSlot, claimed: Bool) {
        let waiting = withClaims { $0.finish(device) }
        for work in waiting { work(claimed) }
    }

    /// A notice from another node sharing the database.
    public func received(_ message: ClusterMessage) {
        switch message.notice {
        case .device(let device):
            registry.apply(device)
        case .token(let token):
            registry.apply(token)
        case .channel(let channel):
            channels.apply(channel)
        case .broadcast(let key):
            heardBroadcasts([key])
        case .removed(let deviceID, let at):
            guard let (slot, bundleIDs) = registry.removedElsewhere(deviceID, at: at) else { return }
            forget(slot, bundleIDs: bundleIDs)
        case .owner(let deviceID, let node, let claim):
            guard let device = registry.slot(ofDevice: deviceID) else { return }
            let (changed, before) = registry.setOwner(device, node, claim: claim)
            guard changed, before == nil || before == registry.nodeID else { return }
            lost(device, to: node)
        case .route(let node, let apnsID, let teamID, let deviceID):
            // Addressed here, or routed to a node that no longer has the device (it died, and the device
            // reconnected to this node before the sender heard of the claim): run here at once rather than
            // leave it to the sweep. A push runs once on a node (`adopted`), and only on the device's owner.
            guard node == registry.nodeID || ownsOrClaims(deviceID) else { return }
            let start = withRoutes { queue -> Bool in
                queue.keys.append(NotificationKey(apnsID: apnsID, teamID: teamID))
                defer { queue.draining = true }
                return !queue.draining
            }
            // Refused after shutdown: they stay pending in the store, and the device's next claim or
            // the sweep brings them back.
            if start, !spawn({ [self] in await drainRoutes() }) { withRoutes { $0.draining = false } }
        }
    }

    /// Loads the routed notifications queued so far in one query and runs them in the order their
    /// notices came (the policy's decisions depend on it: which one is over budget, which coalesces),
    /// until none is left.
    private func drainRoutes() async {
        guard let cluster else { return }
        while true {
            let keys = withRoutes { queue -> [NotificationKey] in
                defer { queue.keys = [] }
                if queue.keys.isEmpty { queue.draining = false }
                return queue.keys
            }
            guard !keys.isEmpty else { return }
            do {
                for stored in try await cluster.notifications(keys) where stored.state == .pending {
                    guard let deviceID = stored.deviceID, let device = registry.slot(ofDevice: deviceID) else {
                        continue
                    }
                    routed(stored, device: device)
                }
            } catch {
                // Still pending in the store: the device's next claim brings them back.
                logger.error(
                    "routed notifications not loaded", metadata: ["count": "\(keys.count)", "error": "\(error)"])
            }
        }
    }

    /// A notification another node stored for a device this node owns (or owned: then it goes on).
    /// `swept`: found by the sweep for undecided pushes rather than by a notice.
    func routed(_ stored: StoredNotification, device: DeviceSlot, swept: Bool = false) {
        let push = stored.notification
        guard
            let placement = place(
                device, orDefer: { { [self] _ in routed(stored, device: device, swept: swept) } })
        else { return }
        switch placement {
        case .elsewhere(let node):
            hand(stored, to: node)
        case .here:
            guard withAdopted({ $0.insert(push.id) }) else { return }
            core.withLock {
                $0.counters.routedIn += 1
                if swept { $0.counters.sweptUndecided += 1 }
            }
            if swept {
                logger.warning(
                    "swept a push no policy had decided", metadata: ["apns_id": "\(push.id)", "device": "\(device)"])
            }
            let now = clock()
            let (_, _, writes) = decideAndCommit(
                now: now, device: device, inserting: (push, device, false), answeringOn: nil,
                { core, _ in core.received(push, device: device, now: now) }, actions: { $0 })
            write(writes)
        }
    }

    /// Pushes other nodes accepted for devices this node runs (the node link, `RouteIntake`), in order: a
    /// new one is stored here with its decision as if its provider had sent it here (its outcome is
    /// known once that commit ends: most of a batch share one); a stored one runs as a routed notice's
    /// would. A device this node does not run or know yet (its registration's notice not heard) is left to
    /// the sender, which goes through the store.
    public func routed(_ pushes: [RoutedPush], from node: String, on eventLoop: any EventLoop)
        -> EventLoopFuture<[RouteOutcome]>
    {
        var outcomes = [RouteOutcome](repeating: .taken, count: pushes.count)
        var commits: [(commit: EventLoopFuture<Void>, indices: [Int])] = []
        var later: [EventLoopFuture<[(Int, RouteOutcome)]>] = []
        for (index, push) in pushes.enumerated() {
            guard let device = registry.slot(ofDevice: push.deviceID) else {
                outcomes[index] = .untaken
                continue
            }
            guard push.stored else {
                switch take(push.notification, device: device, on: eventLoop) {
                case .decided(let outcome):
                    outcomes[index] = outcome
                case .committing(let commit):
                    if let last = commits.indices.last, commits[last].commit === commit {
                        commits[last].indices.append(index)
                    } else {
                        commits.append((commit, [index]))
                    }
                case .later(let future):
                    later.append(future.map { [(index, $0)] })
                }
                continue
            }
            routed(
                StoredNotification(
                    notification: push.notification, expiresAt: push.expiresAt, deviceID: push.deviceID,
                    state: .pending, rule: nil), device: device)
        }
        guard !commits.isEmpty || !later.isEmpty else { return eventLoop.makeSucceededFuture(outcomes) }
        for (commit, indices) in commits {
            later.append(
                outcome(of: commit, for: indices.map { pushes[$0].notification.id }).map { outcome in
                    indices.map { ($0, outcome) }
                })
        }
        return EventLoopFuture.whenAllSucceed(later, on: eventLoop).map { [outcomes] settled in
            var outcomes = outcomes
            for (index, outcome) in settled.joined() { outcomes[index] = outcome }
            return outcomes
        }
    }

    /// What became of new routed pushes stored by `commit`: taken if it succeeded; if not, untaken and
    /// forgotten (`adopted`), so that each runs when its sender routes it through the store.
    private func outcome(of commit: EventLoopFuture<Void>, for ids: [APNsID]) -> EventLoopFuture<RouteOutcome> {
        commit.map { .taken }.recover { [self] _ in
            withAdopted { adopted in for id in ids { adopted.remove(id) } }
            return .untaken
        }
    }

    /// Where a new push routed here stands once its policy ran.
    private enum Taking {
        case decided(RouteOutcome)
        /// Taken once this commit succeeds.
        case committing(EventLoopFuture<Void>)
        /// After a claim of its device.
        case later(EventLoopFuture<RouteOutcome>)
    }

    /// A new push another node accepted for `device`: stored and decided here, as one its provider sent
    /// here would be, once (`adopted`: a push that also comes through the store, its sender having given
    /// up waiting, runs once).
    private func take(_ push: PushNotification, device: DeviceSlot, on eventLoop: any EventLoop) -> Taking {
        var waiting: EventLoopFuture<RouteOutcome>?
        let placement = place(device) {
            let promise = eventLoop.makePromise(of: RouteOutcome.self)
            waiting = promise.futureResult
            return { [self] _ in
                switch take(push, device: device, on: eventLoop) {
                case .decided(let outcome): promise.succeed(outcome)
                case .later(let future): future.cascade(to: promise)
                case .committing(let commit): outcome(of: commit, for: [push.id]).cascade(to: promise)
                }
            }
        }
        switch placement {
        case nil: return .later(waiting!)
        case .elsewhere: return .decided(.untaken)
        case .here: break
        }
        guard withAdopted({ $0.insert(push.id) }) else { return .decided(.taken) }
        let reply = submitHere(push, device: device, on: eventLoop)
        if case .now(.rejected(let rejection)) = reply {
            // Refused (its device's queue is full), not run: forgotten, so that it runs if it comes again.
            withAdopted { $0.remove(push.id) }
            return .decided(.refused(rejection.reason))
        }
        core.withLock { $0.counters.routedIn += 1 }
        switch reply {
        case .now: return .decided(.taken)
        case .later(let future): return .later(future.map(RouteOutcome.init))
        case .afterCommit(let commit): return .committing(commit)
        }
    }

    /// Another node claimed a device this node ran: its session here (if any) is closed, its state
    /// dropped, and its held and queued pushes handed to the new owner (who also finds them pending in the
    /// store, unless they were committed after its claim read them; it runs each once).
    func lost(_ device: DeviceSlot, to node: String) {
        let (session, handOver) = core.withLock { $0.lost(device) }
        session?.close(.moved, reconnectAfterMilliseconds: nil)
        core.withLock { $0.counters.released += 1 }
        let deviceID = registry.deviceID(of: device)
        for push in handOver {
            hand(
                StoredNotification(
                    notification: push, expiresAt: policy.expiry(of: push), deviceID: deviceID, state: .pending,
                    rule: nil), to: node)
        }
    }

    // MARK: Jobs, takeover, sweep

    /// Runs the store work the hub starts, each job a child of the cluster service's task group, until
    /// `finishJobs()`.
    public func runJobs(in group: inout DiscardingTaskGroup) async { await jobQueue.run(in: &group) }

    /// No more jobs (shutdown): the cluster service's task group finishes what it has.
    public func finishJobs() { jobQueue.finish() }

    /// Runs `job` in the cluster service's task group; false, said loudly, when that group has finished
    /// (after shutdown): the caller then settles what the job would have (a claim fails, and what waited
    /// for it is decided without it).
    @discardableResult
    public func spawn(_ job: @escaping @Sendable () async -> Void) -> Bool {
        guard jobQueue.offer(job) else {
            logger.error("store work refused: the cluster service has stopped")
            return false
        }
        return true
    }

    /// This node runs the device's policy from now on, with the state the store gave (a claim or a
    /// takeover): its budgets, its queue and held pushes, and its owner. Unless a later claim is known
    /// (false): then the state given is older than the device's — a takeover that moved the device
    /// before this node's own claim of it did, whose answer came second; or another node's claim heard
    /// first — and the node that made the later claim runs the device (what was adopted meanwhile goes
    /// to it, as when a device is lost).
    @discardableResult
    func take(_ device: DeviceSlot, deviceID: String, _ state: ClaimedDevice, owner: String) -> Bool {
        guard registry.owner(of: device, claimedAfter: state.claim) == nil else { return false }
        withAdopted { adopted in
            for stored in state.pending { _ = adopted.insert(stored.notification.id) }
        }
        adopt(deviceID, budgets: state.budgets, pending: state.pending, now: clock())
        adoptSubscriptions(device, state.subscriptions)
        _ = registry.setOwner(device, owner, claim: state.claim)
        if let later = registry.owner(of: device, claimedAfter: state.claim) {
            // Heard while this state was adopted; its `lost` found nothing here to let go of yet.
            lost(device, to: later)
            return false
        }
        return true
    }

    /// Devices this node took over from nodes whose lease went stale: their pushes are this node's to
    /// decide and deliver now (held for the offline device until it connects, to any node).
    public func tookOver(_ taken: [TakenDevice]) {
        guard let cluster, !taken.isEmpty else { return }
        var count = 0
        for device in taken {
            guard let slot = registry.slot(ofDevice: device.deviceID),
                take(slot, deviceID: device.deviceID, device.claimed, owner: cluster.nodeID)
            else { continue }
            count += 1
        }
        core.withLock { $0.counters.takenOver += count }
        logger.notice(
            "took over the devices of a node that is gone",
            metadata: ["devices": "\(count)", "claimed_meanwhile": "\(taken.count - count)"])
    }

    /// Runs the undecided pushes the sweep found (pending with no rule, accepted a while ago) through
    /// their device's policy here, once each.
    public func sweep(_ keys: [NotificationKey]) async {
        guard let cluster, !keys.isEmpty else { return }
        do {
            for stored in try await cluster.notifications(keys) where stored.state == .pending && stored.rule == nil {
                guard let deviceID = stored.deviceID, let device = registry.slot(ofDevice: deviceID) else { continue }
                routed(stored, device: device, swept: true)
            }
        } catch {
            logger.error("swept notifications not loaded", metadata: ["error": "\(error)"])
        }
    }
}

extension RouteOutcome {
    /// A push the owner decided as if its provider had POSTed it there: taken, or refused with the reason.
    init(_ result: IntakeResult) {
        switch result {
        case .accepted: self = .taken
        case .rejected(let rejection): self = .refused(rejection.reason)
        }
    }
}
