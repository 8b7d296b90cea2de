import PushModel
import Testing

/// `apns-unique-id` is a permutation of the apns-id: every id has one, distinct ids have distinct ones,
/// and it leads back.
@Suite struct UniqueIDTests {
    @Test func theUniqueIDLeadsBackToTheAPNsIDAndDiffersFromIt() {
        var random = SystemRandomNumberGenerator()
        var seen = Set<APNsID>()
        for index in 0..<10_000 {
            let id = index < 3 ? APNsID(high: UInt64(index), low: 0) : APNsID.generate(using: &random)
            let unique = id.uniqueID
            #expect(unique != id)
            #expect(APNsID(uniqueID: unique) == id)
            seen.insert(unique)
        }
        #expect(seen.count == 10_000)
    }

    @Test func itIsTheSameOnEveryNodeAndEveryRun() {
        // Fixed constants, no key per process: a restart, another node or the next version answers the
        // same id for the same apns-id (a known answer, computed apart from this code).
        let id = APNsID(header: "4f6a2b1c-9d8e-4f7a-8b6c-5d4e3f2a1b0c")!
        #expect(id.uniqueID.value == "5e0ea9b0-dcb9-e46a-9d54-b0cc1d297785")
    }
}
