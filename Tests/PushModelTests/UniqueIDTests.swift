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

/// An id's text is written eight digits at a time: it reads as the digit-by-digit text of its bits, in
/// the case each digit was sent.
@Suite struct APNsIDTextTests {
    static func reference(_ high: UInt64, _ low: UInt64) -> String {
        let hex = String(high, radix: 16).leftPadded(16) + String(low, radix: 16).leftPadded(16)
        let digits = Array(hex)
        return [digits[0..<8], digits[8..<12], digits[12..<16], digits[16..<20], digits[20..<32]]
            .map { String($0) }.joined(separator: "-")
    }

    @Test func anIdsTextIsItsBitsInHex() {
        var random = SystemRandomNumberGenerator()
        var cases: [(UInt64, UInt64)] = [(0, 0), (.max, .max), (0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210)]
        for _ in 0..<500 { cases.append((random.next(), random.next())) }
        for (high, low) in cases {
            let id = APNsID(high: high, low: low)
            #expect(id.value == Self.reference(high, low))
            #expect(APNsID(header: id.value) == id)
            // Sent in upper case, or mixed: echoed exactly.
            let upper = id.value.uppercased()
            #expect(APNsID(header: upper)?.value == upper)
            let mixed = String(
                id.value.enumerated().map { $0.offset % 3 == 0 ? Character($0.element.uppercased()) : $0.element })
            #expect(APNsID(header: mixed)?.value == mixed)
            #expect(APNsID(header: mixed)?.hasUpperCaseDigits == (mixed != id.value))
            // Its 16 bytes, most significant first: the text's digits two a byte.
            var bytes: [UInt8] = []
            id.appendBytes(to: &bytes)
            #expect(bytes == Hex.decode(String(id.value.filter { $0 != "-" })))
            #expect(APNsID(bytes: bytes) == id && APNsID(bytes: bytes)?.hasUpperCaseDigits == false)
        }
        #expect(APNsID(bytes: Array(repeating: 0, count: 15)) == nil)
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String { String(repeating: "0", count: width - count) + self }
}
