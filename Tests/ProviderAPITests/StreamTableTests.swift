import NIOHTTP2
import Testing

@testable import ProviderAPI

/// The handler's table of open streams (`StreamTable`) against a `Dictionary` doing the same, through the
/// orders a connection makes: streams start in increasing ids and end in any order, many at once (growth),
/// and with ids far apart (runs of slots that wrap past the table's end, and deletion's backward shift).
@Suite struct StreamTableTests {
    final class State {
        let id: Int
        init(_ id: Int) { self.id = id }
    }

    /// Every operation on both, then every id either ever held looked up in both.
    private struct Checked {
        var table = StreamTable<State>()
        var oracle: [Int: State] = [:]
        var seen: Set<Int> = []

        mutating func insert(_ id: Int) {
            let state = State(id)
            table.insert(state, for: HTTP2StreamID(id))
            oracle[id] = state
            seen.insert(id)
        }

        mutating func remove(_ id: Int) {
            #expect(table.removeValue(forKey: HTTP2StreamID(id)) === oracle.removeValue(forKey: id))
        }

        func check() {
            #expect(table.count == oracle.count)
            #expect(table.isEmpty == oracle.isEmpty)
            for id in seen { #expect(table[HTTP2StreamID(id)] === oracle[id], "stream \(id)") }
        }
    }

    @Test func streamsStartInOrderAndEndInAnyOrder() {
        var generator = SystemRandomNumberGenerator()
        var checked = Checked()
        var open: [Int] = []
        var next = 1
        for _ in 0..<20_000 {
            // Up to ~300 open at once: the table grows past its first sizes, and shrinks to none at times.
            if open.isEmpty || (open.count < 300 && Bool.random(using: &generator)) {
                checked.insert(next)
                open.append(next)
                next += 2
            } else {
                checked.remove(open.remove(at: Int.random(in: 0..<open.count, using: &generator)))
            }
        }
        checked.check()
        for id in open { checked.remove(id) }
        checked.check()
        #expect(checked.table.isEmpty)
    }

    @Test func idsFarApartAndReplacedStates() {
        var checked = Checked()
        // Ids that are equal modulo every power of two up to 2^20: for a table indexed by the id's low bits,
        // one run of slots.
        let ids = (0..<200).map { 1 + $0 << 21 }
        for id in ids { checked.insert(id) }
        checked.check()
        // A state replaced keeps one entry.
        checked.insert(ids[7])
        checked.check()
        for id in ids where id % 3 == 0 { checked.remove(id) }
        checked.check()
        // Removing what is not there changes nothing.
        checked.remove(ids[3])
        checked.remove(2_000_000_001)
        checked.check()
        for id in ids { checked.remove(id) }
        checked.check()
    }

    @Test func aSmallTableWrapsAround() {
        // Sixteen slots: fill most of them, remove from the middle of runs, and look everything up, many times
        // over with fresh multipliers (each table draws its own), so that runs wrap past the last slot.
        for _ in 0..<500 {
            var checked = Checked()
            let ids = (0..<11).map { _ in 2 * Int.random(in: 0..<1_000_000) + 1 }
            for id in ids { checked.insert(id) }
            for id in ids.shuffled().prefix(5) { checked.remove(id) }
            checked.check()
            for id in ids.shuffled() { checked.remove(id) }
            checked.check()
        }
    }

    @Test func removeAllEmptiesTheTable() {
        var table = StreamTable<State>()
        for id in stride(from: 1, to: 200, by: 2) { table.insert(State(id), for: HTTP2StreamID(id)) }
        #expect(table.count == 100)
        table.removeAll()
        #expect(table.isEmpty)
        #expect(table[HTTP2StreamID(1)] == nil)
        table.insert(State(1), for: HTTP2StreamID(1))
        #expect(table[HTTP2StreamID(1)]?.id == 1)
    }
}
