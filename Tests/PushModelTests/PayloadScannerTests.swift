import Foundation
import Testing

@testable import PushModel

@Suite struct PayloadScannerTests {
    func scan(_ text: String) -> Result<PayloadSummary, PayloadScanner.Failure> {
        PayloadScanner.scan(Array(text.utf8))
    }

    @Test func readsTheAPSKeys() throws {
        let summary = try scan(
            #"{"aps":{"alert":{"title":"t","body":"b"},"sound":"default","badge":3,"mutable-content":1},"custom":[1,2,{"x":null}]}"#
        ).get()
        #expect(summary.hasAlert && summary.hasSound && summary.hasBadge && summary.mutableContent)
        #expect(!summary.contentAvailable)
        #expect(summary.isAlerting && !summary.isSilent)
    }

    @Test func silentIsContentAvailableOneAlone() throws {
        #expect(try scan(#"{"aps":{"content-available":1}}"#).get().isSilent)
        #expect(try scan(#"{"aps":{"content-available":1},"data":{"id":7}}"#).get().isSilent)
        #expect(try !scan(#"{"aps":{"content-available":0}}"#).get().isSilent)
        #expect(try !scan(#"{"aps":{"content-available":"1"}}"#).get().isSilent)
        #expect(try !scan(#"{"aps":{"content-available":1,"sound":""}}"#).get().isSilent)
        #expect(try !scan(#"{"aps":{"content-available":10}}"#).get().isSilent)
    }

    /// APNs accepts a payload without `aps` (VoIP, MDM, location): the summary says it has none.
    @Test(arguments: [#"{"aps":1}"#, #"{"aps":[]}"#, #"{"other":{}}"#, "{}", #"{"aps":"alert"}"#])
    func anObjectWithoutAnAPSObjectIsReadWithoutOne(_ text: String) throws {
        let summary = try scan(text).get()
        #expect(!summary.hasAPS && !summary.isAlerting && !summary.contentAvailable)
        #expect(try scan(#"{"aps":{}}"#).get().hasAPS)
    }

    @Test func escapedKeysAndEvents() throws {
        let summary = try scan(#"{"\u0061ps":{"ev\u0065nt":"upd\u00e4te","content-changed":true}}"#).get()
        #expect(summary.event == "updäte")
        #expect(summary.contentChanged)
    }

    @Test(arguments: [
        "", " ", "{", "}", "[]", "null", "1", #""aps""#,
        #"{"aps":{},}"#, #"{"aps":{}} {}"#, #"{"aps":{"a":01}}"#, #"{"aps":{"a":1.}}"#, #"{"aps":{"a":-}}"#,
        #"{"aps":{"a":tru}}"#, #"{"aps":{"a":"\x"}}"#, #"{"aps":{"a":"\ud800"}}"#, #"{"aps":{"a":"\udc00x"}}"#,
        "{\"aps\":{\"a\":\"\u{01}\"}}", #"{'aps':{}}"#, #"{"aps":{"a":1,}}"#, #"{"aps":{"a" 1}}"#,
    ])
    func refusesWhatIsNotAJSONObject(_ text: String) {
        guard case .failure = scan(text) else {
            Issue.record("accepted \(text)")
            return
        }
    }

    /// Contiguous bytes are read through a buffer pointer, other collections through their subscript: the
    /// same verdicts and the same offsets, counted in the collection's own indices.
    @Test(arguments: [
        #"{"aps":{"content-available":1},"job":{"id":"4f6a2b1c"}}"#, #"{"aps":{"a":01}}"#, #"{"aps":{"a":"\x"}}"#,
        #"{"aps":{"alert":"é€😀"},"n":[1,2.5e3,-0,true,null]}"#, "[1]", #"{"aps":{"a":1,}}"#, "{\"a\":\"\u{01}\"}",
        #"{"\u0061ps":{"event":"update"}}"#,
    ])
    func readsEveryCollectionAlike(_ text: String) {
        let bytes = Array(text.utf8)
        let padded = Array("xxxxx".utf8) + bytes
        let slice = padded[5...]
        let expected = PayloadScanner.scan(bytes).mapError { $0.offset(by: 5) }
        #expect(PayloadScanner.scan(slice) == expected)
        #expect(PayloadScanner.scan(slice.lazy.map { $0 }) == expected)
        #expect(PayloadScanner.scan(bytes.lazy.map { $0 }) == PayloadScanner.scan(bytes))
    }

    @Test func refusesInvalidUTF8() {
        let invalid: [[UInt8]] = [
            [0xC0, 0x80],  // overlong
            [0xED, 0xA0, 0x80],  // surrogate
            [0xF4, 0x90, 0x80, 0x80],  // above U+10FFFF
            [0xE2, 0x82],  // truncated
            [0xFF],
        ]
        for bytes in invalid {
            let payload = Array(#"{"aps":{},"x":""#.utf8) + bytes + Array(#""}"#.utf8)
            #expect(throws: Never.self) { _ = PayloadScanner.scan(payload) }
            guard case .failure = PayloadScanner.scan(payload) else {
                Issue.record("accepted \(bytes)")
                continue
            }
        }
        let valid = Array(#"{"aps":{},"x":""#.utf8) + Array("é€😀".utf8) + Array(#""}"#.utf8)
        #expect((try? PayloadScanner.scan(valid).get()) != nil)
    }

    @Test func limitsNesting() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(scan(#"{"aps":{},"x":\#(deep)}"#) == .failure(.tooDeep))
        let fine = String(repeating: "[", count: 20) + String(repeating: "]", count: 20)
        #expect((try? scan(#"{"aps":{},"x":\#(fine)}"#).get()) != nil)
    }

    /// Agrees with Foundation's parser on what is valid JSON, over many generated documents.
    @Test func agreesWithFoundationOnValidity() {
        var generator = SplitMix(seed: 42)
        let pieces = [
            "{", "}", "[", "]", ",", ":", "\"aps\"", "\"a\"", "1", "-0.5e3", "true", "null", " ", "\"\\n\"",
            "{\"aps\":{}}",
        ]
        for _ in 0..<3000 {
            let count = Int(generator.next() % 12) + 1
            let text =
                "{\"aps\":{},\"k\":"
                + (0..<count).map { _ in pieces[Int(generator.next() % UInt64(pieces.count))] }.joined() + "}"
            // Foundation tolerates trailing commas; RFC 8259 (and the scanner) does not.
            if text.range(of: #",\s*[}\]]"#, options: .regularExpression) != nil { continue }
            let foundation = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) != nil
            let ours: Bool
            switch scan(text) {
            case .success: ours = true
            case .failure(.malformed): ours = false
            case .failure: ours = true  // valid JSON, but not what the gateway accepts
            }
            #expect(ours == foundation, "\(text)")
        }
    }
}

struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
