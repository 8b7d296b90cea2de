import PushModel

/// A push on its way to one device: the policy decided to deliver it, the device has not acknowledged it.
public struct Outgoing: Sendable, Equatable {
    public var push: PushNotification
    /// Why the policy delivers it (`alerting`, `on_budget`, `released_…`).
    public var rule: Rule
    /// A background wake (the app must complete within the deadline, which runs from the acknowledgement).
    public var wake: Bool
    /// How many times it was written to a connection of the device (more than once after a connection
    /// ended before its acknowledgement).
    public var sends: Int
    /// Its notification is in the store (or there is no store). One that is not yet waits in the queue,
    /// and the pushes behind it with it, until its commit: a push whose provider is answered with an
    /// error because the store could not write it is withdrawn, never written to the device.
    public var durable: Bool

    public init(push: PushNotification, rule: Rule, wake: Bool, sends: Int = 0, durable: Bool = true) {
        self.push = push
        self.rule = rule
        self.wake = wake
        self.sends = sends
        self.durable = durable
    }

    public var id: APNsID { push.id }
}

/// One device's delivery queue, as a pure state machine: what the policy decided to deliver waits here
/// until the device acknowledges it. At most `window` pushes are written and unacknowledged at once;
/// the rest wait here (and pending in the store), not in a socket buffer. When a connection ends, what
/// it had not acknowledged goes back to the front of the queue, in the order it was sent, and is written
/// again when the device connects: delivery is at least once, and the device drops a repeated apns-id.
///
/// Events: `enqueue`, `acknowledged`, `connected`, `disconnected`, `removeAll`. Each returns what to write
/// to the device's connection now (in order). No clock, no I/O: time comes in as an argument, and
/// `isStalled` says when a connection has had pushes in flight without acknowledging any for too long.
public struct DeliveryQueue: Sendable {
    public let window: Int
    public private(set) var isConnected = false
    /// Written to the current connection and not acknowledged, in the order written.
    private var inFlight: [Outgoing] = []
    /// Waiting for room in the window or for a connection, in order; `head` is the first still waiting.
    private var waiting: [Outgoing] = []
    private var head = 0
    /// When the device last made progress: its window was empty until then, or it acknowledged one.
    private var progressAt = UnixTime(milliseconds: 0)

    public init(window: Int) {
        precondition(window > 0, "a delivery window holds at least one push")
        self.window = window
    }

    /// Pushes the device has not acknowledged: written to its connection or waiting.
    public var count: Int { inFlight.count + waiting.count - head }
    public var inFlightCount: Int { inFlight.count }
    public var isEmpty: Bool { count == 0 }

    /// Everything not yet acknowledged, in the order it will be (or was) written.
    public var all: [Outgoing] { inFlight + waiting[head...] }

    public func contains(_ id: APNsID) -> Bool {
        inFlight.contains { $0.id == id } || waiting[head...].contains { $0.id == id }
    }

    // MARK: Events

    /// The policy decided to deliver `item`: written now if the device is connected and the window has
    /// room, else it waits its turn.
    public mutating func enqueue(_ item: Outgoing, now: UnixTime, into writes: inout [Outgoing]) {
        if item.durable, isConnected, inFlight.count < window, head == waiting.count {
            var item = item
            item.sends += 1
            if inFlight.isEmpty { progressAt = now }
            inFlight.append(item)
            writes.append(item)
        } else {
            waiting.append(item)
        }
    }

    /// The device acknowledged `id`: it is delivered, and the window has room for the next one. An
    /// acknowledgement of a push still waiting (written to a connection that ended, acknowledged late)
    /// delivers it too; an unknown or repeated one returns nil.
    public mutating func acknowledged(_ id: APNsID, now: UnixTime, into writes: inout [Outgoing]) -> Outgoing? {
        var found: Outgoing?
        if let index = inFlight.firstIndex(where: { $0.id == id }) {
            found = inFlight.remove(at: index)
            progressAt = now
        } else if let index = waiting[head...].firstIndex(where: { $0.id == id }) {
            found = waiting.remove(at: index)
        }
        guard found != nil else { return nil }
        fill(now: now, into: &writes)
        return found
    }

    /// The store committed `id`'s notification: it may be written now (it and what waits behind it, as
    /// far as the window lets them).
    public mutating func stored(_ id: APNsID, now: UnixTime, into writes: inout [Outgoing]) {
        if let index = waiting[head...].firstIndex(where: { $0.id == id }) { waiting[index].durable = true }
        fill(now: now, into: &writes)
    }

    /// The store could not commit `id`'s notification (its provider was answered with an error): it is
    /// taken out, never written. Returns it (nil if it is not here), with what may be written now.
    public mutating func withdraw(_ id: APNsID, now: UnixTime, into writes: inout [Outgoing]) -> Outgoing? {
        guard let index = waiting[head...].firstIndex(where: { $0.id == id && !$0.durable }) else { return nil }
        let item = waiting.remove(at: index)
        fill(now: now, into: &writes)
        return item
    }

    /// A connection of the device was accepted: what waits is written, up to the window.
    public mutating func connected(now: UnixTime, into writes: inout [Outgoing]) {
        if isConnected { requeueInFlight() }
        isConnected = true
        fill(now: now, into: &writes)
    }

    /// Whether the connection has had pushes written to it and acknowledged none of them for longer than
    /// `timeoutMilliseconds` (a device that reads slowly but keeps acknowledging is not stalled).
    public func isStalled(now: UnixTime, timeoutMilliseconds: Int64) -> Bool {
        isConnected && !inFlight.isEmpty && now.milliseconds - progressAt.milliseconds > timeoutMilliseconds
    }

    /// The device's connection ended (closed, dropped, replaced, stalled, shut down): what it had not
    /// acknowledged goes back to the front, in the order it was written, for the next connection.
    public mutating func disconnected() {
        isConnected = false
        requeueInFlight()
    }

    /// Another node runs the device now: everything here is let go (it is pending in the store, and the
    /// new owner writes it). Returns what was here, in order.
    public mutating func removeAll() -> [Outgoing] {
        defer {
            inFlight = []
            waiting = []
            head = 0
            isConnected = false
        }
        return all
    }

    // MARK: Plumbing

    private mutating func requeueInFlight() {
        guard !inFlight.isEmpty else { return }
        compact()
        waiting.insert(contentsOf: inFlight, at: 0)
        inFlight.removeAll()
    }

    private mutating func fill(now: UnixTime, into writes: inout [Outgoing]) {
        guard isConnected else { return }
        if inFlight.isEmpty { progressAt = now }
        while inFlight.count < window, head < waiting.count, waiting[head].durable {
            var item = waiting[head]
            head += 1
            item.sends += 1
            inFlight.append(item)
            writes.append(item)
        }
        if head == waiting.count {
            waiting.removeAll(keepingCapacity: waiting.count <= 64)
            head = 0
        } else if head > 1024, head * 2 > waiting.count {
            compact()
        }
    }

    private mutating func compact() {
        guard head > 0 else { return }
        waiting.removeFirst(head)
        head = 0
    }
}

/// Every device's delivery queue, with the fleet's two limits: the window (written, unacknowledged) and
/// how many may wait for one device before further pushes to it are refused (`429 TooManyRequests`, as
/// APNs answers for a token it is sending too much to) rather than accepted and dropped for space.
public struct DeliveryQueues: Sendable {
    public let window: Int
    public let limit: Int
    private var queues: [DeviceSlot: DeliveryQueue] = [:]
    /// Pushes not acknowledged across the fleet (written or waiting), kept as they come and go.
    public private(set) var totalCount = 0

    public init(window: Int, limit: Int) {
        self.window = max(1, window)
        self.limit = max(self.window, limit)
    }

    /// Pushes waiting for `device` or written to it and not acknowledged.
    public func count(of device: DeviceSlot) -> Int { queues[device]?.count ?? 0 }
    public func isFull(_ device: DeviceSlot) -> Bool { count(of: device) >= limit }
    public func isConnected(_ device: DeviceSlot) -> Bool { queues[device]?.isConnected ?? false }
    public func outstanding(of device: DeviceSlot) -> [Outgoing] { queues[device]?.all ?? [] }

    public mutating func enqueue(_ item: Outgoing, for device: DeviceSlot, now: UnixTime, into writes: inout [Outgoing])
    {
        queues[device, default: DeliveryQueue(window: window)].enqueue(item, now: now, into: &writes)
        totalCount += 1
    }

    public mutating func acknowledged(
        _ id: APNsID, by device: DeviceSlot, now: UnixTime, into writes: inout [Outgoing]
    ) -> Outgoing? {
        taking(from: device) { $0.acknowledged(id, now: now, into: &writes) }
    }

    public mutating func connected(_ device: DeviceSlot, now: UnixTime, into writes: inout [Outgoing]) {
        queues[device, default: DeliveryQueue(window: window)].connected(now: now, into: &writes)
    }

    /// `DeliveryQueue.stored` for `device`'s queue.
    public mutating func stored(_ id: APNsID, for device: DeviceSlot, now: UnixTime, into writes: inout [Outgoing]) {
        guard let index = queues.index(forKey: device) else { return }
        queues.values[index].stored(id, now: now, into: &writes)
        dropIfIdle(at: index)
    }

    /// `DeliveryQueue.withdraw` for `device`'s queue.
    public mutating func withdraw(
        _ id: APNsID, for device: DeviceSlot, now: UnixTime, into writes: inout [Outgoing]
    ) -> Outgoing? {
        taking(from: device) { $0.withdraw(id, now: now, into: &writes) }
    }

    /// Changes `device`'s queue in place with `take` (a copy would copy its buffers on the first change;
    /// one look-up, by index), which returns the push it took out (counted) if any.
    private mutating func taking(
        from device: DeviceSlot, _ take: (inout DeliveryQueue) -> Outgoing?
    ) -> Outgoing? {
        guard let index = queues.index(forKey: device), let found = take(&queues.values[index]) else { return nil }
        totalCount -= 1
        dropIfIdle(at: index)
        return found
    }

    /// Connected devices that acknowledged nothing of what was written to them for `timeoutMilliseconds`.
    public func stalled(now: UnixTime, timeoutMilliseconds: Int64) -> [DeviceSlot] {
        queues.compactMap { $0.value.isStalled(now: now, timeoutMilliseconds: timeoutMilliseconds) ? $0.key : nil }
    }

    public mutating func disconnected(_ device: DeviceSlot) {
        guard let index = queues.index(forKey: device) else { return }
        queues.values[index].disconnected()
        dropIfIdle(at: index)
    }

    public mutating func removeAll(of device: DeviceSlot) -> [Outgoing] {
        guard var queue = queues.removeValue(forKey: device) else { return [] }
        let removed = queue.removeAll()
        totalCount -= removed.count
        return removed
    }

    /// Keeps a queue only while it holds something or its device is connected.
    private mutating func dropIfIdle(at index: Dictionary<DeviceSlot, DeliveryQueue>.Index) {
        if queues.values[index].isEmpty, !queues.values[index].isConnected { queues.remove(at: index) }
    }
}
