import Foundation
import PushModel
import Testing

/// A device token is held as bits (64 digits) or text (any other length): either way it reads as the path
/// sent it, lower-cased, and compares as a token.
@Suite struct DeviceTokenTests {
    static let digits = "0123456789abcdef0123456789ABCDEF00ff11ee22dd33cc44bb55aa66997788"

    @Test func sixtyFourDigitsAreHeldInlineAndReadBackLowerCased() {
        let token = DeviceToken(Self.digits)!
        #expect(token.isInline)
        #expect(token.hex == Self.digits.lowercased())
        #expect(token == DeviceToken(Self.digits.lowercased())!)
        #expect(token.hashValue == DeviceToken(Self.digits.uppercased())!.hashValue)
        var bytes: [UInt8] = [1]
        token.appendHex(to: &bytes)
        #expect(bytes == [1] + Array(Self.digits.lowercased().utf8))
        #expect(DeviceToken.placeholder.hex == String(repeating: "0", count: 64))
    }

    /// Every digit of either case at every position reads back (the digits are read eight at a time).
    @Test func randomTokensOfEitherCaseReadBack() {
        var random = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789abcdefABCDEF")
        for _ in 0..<500 {
            let text = String((0..<64).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
            let token = DeviceToken(text)
            #expect(token?.hex == text.lowercased(), "\(text)")
        }
    }

    @Test func anyByteThatIsNotAHexDigitIsRefusedWhereverItIs() {
        for position in 0..<64 {
            for byte in ["g", "G", "/", ":", "@", "`", " ", "é", "\u{10}", "\u{16}", "\u{7f}", "\u{c1}"] {
                var characters = Array(Self.digits)
                characters[position] = Character(byte)
                #expect(DeviceToken(String(characters)) == nil, "\(byte) at \(position)")
            }
        }
        #expect(DeviceToken(String(Self.digits.dropLast(2))) == nil, "62 digits, not allowed by default")
    }

    @Test func otherLengthsKeepTheirTextAndAreNeverEqualToAnInlineToken() {
        let long = String(repeating: "Ab", count: 50)
        let token = DeviceToken(long, lengths: 2...200)!
        #expect(!token.isInline && token.hex == long.lowercased())
        let short = DeviceToken(String(Self.digits.prefix(62)), lengths: 2...200)!
        #expect(short != DeviceToken(Self.digits)!)
        #expect(DeviceToken("abc", lengths: 2...200) == nil, "an odd count of digits")
    }

    /// A token's bytes are its hex read two digits a byte, and their hex is the same token, inline or not.
    @Test func aTokenIsItsBytes() {
        for (text, lengths) in [(Self.digits, 64...64), (String(repeating: "Ab", count: 50), 2...200), ("0f", 2...64)] {
            let token = DeviceToken(text, lengths: lengths)!
            var bytes: [UInt8] = [7]
            token.appendBytes(to: &bytes)
            #expect(bytes == [7] + Hex.decode(text)!)
            // Read back as the SQLite store reads its column: the bytes' hex.
            let back = DeviceToken(Hex.encode(bytes.dropFirst()), lengths: lengths)
            #expect(back == token && back?.hex == token.hex && back?.isInline == token.isInline)
        }
    }

    /// The JSON a token has always had: `{"hex": "…"}`, lower case; read back to the same token.
    @Test func aTokenEncodesAsItsHex() throws {
        for token in [DeviceToken(Self.digits)!, DeviceToken("ABCD", lengths: 2...64)!] {
            let json = try JSONEncoder().encode(token)
            #expect(String(decoding: json, as: UTF8.self) == #"{"hex":"\#(token.hex)"}"#)
            #expect(try JSONDecoder().decode(DeviceToken.self, from: json) == token)
        }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(DeviceToken.self, from: Data(#"{"hex":"xyz"}"#.utf8))
        }
    }
}
