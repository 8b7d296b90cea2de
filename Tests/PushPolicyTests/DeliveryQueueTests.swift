import PushModel
import Testing

@testable import PushPolicy

/// The delivery queue: every event in every state (disconnected, connected with room, connected with a
/// full window), and both orders of each race (an acknowledgement against the close of its connection).
@Suite struct DeliveryQueueTests {
    var pushes = Pushes()

    mutating func items(_ count: Int) -> [Outgoing] {
        (0..<count).map { _ in Outgoing(push: pushes.make(.alerting), rule: .alerting, wake: false) }
    }

    @Test mutating func writesUpToTheWindowThenWaitsForAcknowledgements() {
        var queue = DeliveryQueue(window: 2)
        var writes: [Outgoing] = []
        queue.connected(now: t0, into: &writes)
        let five = items(5)
        for item in five { queue.enqueue(item, now: t0, into: &writes) }
        #expect(writes.map(\.id) == five.prefix(2).map(\.id))
        #expect(queue.inFlightCount == 2)
        #expect(queue.count == 5)

        writes = []
        #expect(queue.acknowledged(five[0].id, now: t0, into: &writes)?.id == five[0].id)
        #expect(writes.map(\.id) == [five[2].id], "the freed place goes to the next in order")
        #expect(
            queue.acknowledged(five[0].id, now: t0, into: &writes) == nil, "a repeated acknowledgement delivers nothing"
        )
        #expect(queue.acknowledged(pushes.make(.alerting).id, now: t0, into: &writes) == nil, "an unknown one neither")
        #expect(writes.count == 1)
    }

    /// A push whose insert is not committed waits, and what is behind it with it; stored, it is written;
    /// withdrawn (the commit failed), it is never written and the next goes.
    @Test mutating func aPushNotYetStoredWaitsForItsCommitAndAWithdrawnOneIsNeverWritten() {
        var queue = DeliveryQueue(window: 4)
        var writes: [Outgoing] = []
        queue.connected(now: t0, into: &writes)
        var three = items(3)
        three[0].durable = false
        three[1].durable = false
        for item in three { queue.enqueue(item, now: t0, into: &writes) }
        #expect(writes.isEmpty, "nothing overtakes a push waiting for its commit")
        #expect(queue.count == 3)

        queue.stored(three[0].id, now: t0, into: &writes)
        #expect(writes.map(\.id) == [three[0].id], "the second still waits for its own commit")
        writes = []
        #expect(queue.withdraw(three[1].id, now: t0, into: &writes)?.id == three[1].id)
        #expect(writes.map(\.id) == [three[2].id], "the withdrawn push is never written; the next goes")
        #expect(queue.count == 2)
        #expect(queue.withdraw(three[2].id, now: t0, into: &writes) == nil, "a stored push is not withdrawn")

        // Across a reconnect: still not written until stored.
        var later = items(1)[0]
        later.durable = false
        queue.enqueue(later, now: t0, into: &writes)
        queue.disconnected()
        writes = []
        queue.connected(now: t0, into: &writes)
        #expect(!writes.contains { $0.id == later.id })
        writes = []
        queue.stored(later.id, now: t0, into: &writes)
        #expect(writes.map(\.id) == [later.id])
    }

    @Test mutating func nothingIsWrittenWhileDisconnectedAndAllOfItInOrderOnConnect() {
        var queue = DeliveryQueue(window: 3)
        var writes: [Outgoing] = []
        let four = items(4)
        for item in four { queue.enqueue(item, now: t0, into: &writes) }
        #expect(writes.isEmpty)
        queue.disconnected()  // harmless when already disconnected
        queue.connected(now: t0, into: &writes)
        #expect(writes.map(\.id) == four.prefix(3).map(\.id))
        #expect(writes.allSatisfy { $0.sends == 1 })
    }

    @Test mutating func whatAConnectionDidNotAcknowledgeIsWrittenAgainFirstInItsOrder() {
        var queue = DeliveryQueue(window: 2)
        var writes: [Outgoing] = []
        queue.connected(now: t0, into: &writes)
        let four = items(4)
        for item in four { queue.enqueue(item, now: t0, into: &writes) }
        #expect(writes.map(\.id) == [four[0].id, four[1].id])

        queue.disconnected()
        #expect(queue.count == 4, "nothing is lost with the connection")
        #expect(queue.all.map(\.id) == four.map(\.id), "the unacknowledged go back to the front")

        writes = []
        queue.connected(now: t0, into: &writes)
        #expect(writes.map(\.id) == [four[0].id, four[1].id])
        #expect(writes.map(\.sends) == [2, 2], "written a second time")
    }

    @Test mutating func anAcknowledgementAfterTheCloseStillDelivers() {
        // Race: the device acknowledged, then its connection closed, but the close was handled first.
        var queue = DeliveryQueue(window: 4)
        var writes: [Outgoing] = []
        queue.connected(now: t0, into: &writes)
        let two = items(2)
        for item in two { queue.enqueue(item, now: t0, into: &writes) }
        queue.disconnected()
        writes = []
        #expect(queue.acknowledged(two[0].id, now: t0, into: &writes)?.id == two[0].id)
        #expect(writes.isEmpty, "nothing is written while disconnected")
        queue.connected(now: t0, into: &writes)
        #expect(writes.map(\.id) == [two[1].id], "only the one not acknowledged is written again")
    }

    @Test mutating func anAcknowledgementBeforeTheCloseIsNotWrittenAgain() {
        // The other order: the acknowledgement is handled, then the close.
        var queue = DeliveryQueue(window: 4)
        var writes: [Outgoing] = []
        queue.connected(now: t0, into: &writes)
        let two = items(2)
        for item in two { queue.enqueue(item, now: t0, into: &writes) }
        _ = queue.acknowledged(two[0].id, now: t0, into: &writes)
        queue.disconnected()
        writes = []
        queue.connected(now: t0, into: &writes)
        #expect(writes.map(\.id) == [two[1].id])
    }

    @Test mutating func aSecondConnectionTakesOverWhatTheFirstHadNotAcknowledged() {
        var queue = DeliveryQueue(window: 2)
        var writes: [Outgoing] = []
        queue.connected(now: t0, into: &writes)
        let three = items(3)
        for item in three { queue.enqueue(item, now: t0, into: &writes) }
        writes = []
        queue.connected(now: t0, into: &writes)  // replaced without a disconnect in between
        #expect(writes.map(\.id) == [three[0].id, three[1].id])
        #expect(queue.count == 3)
    }

    @Test mutating func newPushesQueueBehindTheOnesWaitingForRoom() {
        var queue = DeliveryQueue(window: 1)
        var writes: [Outgoing] = []
        let three = items(3)
        queue.enqueue(three[0], now: t0, into: &writes)
        queue.connected(now: t0, into: &writes)
        queue.enqueue(three[1], now: t0, into: &writes)
        _ = queue.acknowledged(three[0].id, now: t0, into: &writes)
        queue.enqueue(three[2], now: t0, into: &writes)
        #expect(writes.map(\.id) == three.prefix(2).map(\.id))
        _ = queue.acknowledged(three[1].id, now: t0, into: &writes)
        #expect(writes.map(\.id) == three.map(\.id), "in the order they were decided")
    }

    @Test mutating func removeAllLetsEverythingGo() {
        var queue = DeliveryQueue(window: 1)
        var writes: [Outgoing] = []
        queue.connected(now: t0, into: &writes)
        let three = items(3)
        for item in three { queue.enqueue(item, now: t0, into: &writes) }
        #expect(queue.removeAll().map(\.id) == three.map(\.id))
        #expect(queue.isEmpty)
        #expect(!queue.isConnected)
    }

    @Test mutating func aLongQueueDrainsInOrderThroughItsWindow() {
        var queue = DeliveryQueue(window: 8)
        var writes: [Outgoing] = []
        let many = items(3000)
        for item in many { queue.enqueue(item, now: t0, into: &writes) }
        queue.connected(now: t0, into: &writes)
        var index = 0
        while index < writes.count {
            _ = queue.acknowledged(writes[index].id, now: t0, into: &writes)
            index += 1
        }
        #expect(writes.map(\.id) == many.map(\.id))
        #expect(queue.isEmpty)
    }

    @Test mutating func theFleetRefusesPastItsLimitAndForgetsIdleDevices() {
        var queues = DeliveryQueues(window: 2, limit: 3)
        var writes: [Outgoing] = []
        let four = items(4)
        for item in four.prefix(3) { queues.enqueue(item, for: 7, now: t0, into: &writes) }
        #expect(queues.isFull(7))
        #expect(!queues.isFull(8))
        queues.connected(7, now: t0, into: &writes)
        var index = 0
        while index < writes.count {
            _ = queues.acknowledged(writes[index].id, by: 7, now: t0, into: &writes)
            index += 1
        }
        #expect(queues.count(of: 7) == 0)
        queues.disconnected(7)
        #expect(queues.totalCount == 0)
        #expect(queues.acknowledged(four[3].id, by: 9, now: t0, into: &writes) == nil, "a device with no queue")
    }

    @Test mutating func aConnectionThatAcknowledgesNothingIsStalledOneThatAcknowledgesSlowlyIsNot() {
        var queue = DeliveryQueue(window: 2)
        var writes: [Outgoing] = []
        queue.connected(now: t0, into: &writes)
        #expect(!queue.isStalled(now: t0.adding(seconds: 100), timeoutMilliseconds: 30_000), "nothing in flight")
        let three = items(3)
        for item in three { queue.enqueue(item, now: t0.adding(seconds: 100), into: &writes) }
        #expect(!queue.isStalled(now: t0.adding(seconds: 130), timeoutMilliseconds: 30_000))
        _ = queue.acknowledged(three[0].id, now: t0.adding(seconds: 129), into: &writes)
        #expect(!queue.isStalled(now: t0.adding(seconds: 150), timeoutMilliseconds: 30_000), "it made progress")
        #expect(queue.isStalled(now: t0.adding(seconds: 160), timeoutMilliseconds: 30_000))
        queue.disconnected()
        #expect(!queue.isStalled(now: t0.adding(seconds: 160), timeoutMilliseconds: 30_000), "no connection")
        queue.connected(now: t0.adding(seconds: 200), into: &writes)
        #expect(!queue.isStalled(now: t0.adding(seconds: 229), timeoutMilliseconds: 30_000), "a new connection's clock")
    }

    /// The fleet's stall check, through a random run of every event on a few devices: it finds exactly the
    /// devices whose own queue says it is stalled, and the fleet writes what each queue alone would.
    @Test mutating func theFleetsStallCheckFindsWhatEachQueueSays() {
        var queues = DeliveryQueues(window: 2, limit: 50)
        var model: [DeviceSlot: DeliveryQueue] = [:]
        var random = FastRandom(seed: 11)
        var sent: [DeviceSlot: [APNsID]] = [:]
        var now = t0
        for _ in 0..<5_000 {
            now = now.adding(milliseconds: Int64(random.next() % 4_000))
            let device = DeviceSlot(random.next() % 6)
            var writes: [Outgoing] = []
            var mirrored: [Outgoing] = []
            var queue = model[device] ?? DeliveryQueue(window: 2)
            switch random.next() % 6 {
            case 0, 1:
                guard !queues.isFull(device) else { continue }
                let item = items(1)[0]
                queues.enqueue(item, for: device, now: now, into: &writes)
                queue.enqueue(item, now: now, into: &mirrored)
            case 2:
                guard let id = sent[device]?.randomElement(using: &random) else { continue }
                _ = queues.acknowledged(id, by: device, now: now, into: &writes)
                _ = queue.acknowledged(id, now: now, into: &mirrored)
            case 3:
                queues.connected(device, now: now, into: &writes)
                queue.connected(now: now, into: &mirrored)
            case 4:
                queues.disconnected(device)
                queue.disconnected()
            default:
                if random.next() % 8 == 0 {
                    _ = queues.removeAll(of: device)
                    queue = DeliveryQueue(window: 2)
                }
            }
            model[device] = queue
            sent[device, default: []] += writes.map(\.id)
            #expect(writes.map(\.id) == mirrored.map(\.id))
            let expected = model.keys.filter { model[$0]!.isStalled(now: now, timeoutMilliseconds: 10_000) }.sorted()
            #expect(queues.stalled(now: now, timeoutMilliseconds: 10_000).sorted() == expected)
        }
    }
}
