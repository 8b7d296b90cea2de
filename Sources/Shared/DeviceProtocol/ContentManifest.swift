/// The content server's manifest as devices read it: `{"version":N,"published_at":ms,"item":{…}}`, the
/// version first. `pushgate origin` writes it; a team's own server can serve the same.
public enum ContentManifest {
    public static func json(version: Int, publishedAt: Int64, bytes: Int) -> String {
        #"{"version":\#(version),"published_at":\#(publishedAt),"item":{"version":\#(version),"bytes":\#(bytes),"path":"/items/\#(version)"}}"#
    }

    /// The version a manifest names; nil when it is not a manifest.
    public static func version(of body: some Collection<UInt8>) -> Int? {
        number(#""version":"#, in: Array(body)).map(Int.init)
    }

    /// When the manifest's version was published (ms since 1970); nil when it does not say.
    public static func publishedAt(of body: some Collection<UInt8>) -> Int64? {
        number(#""published_at":"#, in: Array(body))
    }

    /// The digits after the first `key` (at most 18 of them).
    static func number(_ key: String, in bytes: [UInt8]) -> Int64? {
        let key = Array(key.utf8)
        guard bytes.count > key.count else { return nil }
        for start in 0...(bytes.count - key.count) where bytes[start..<(start + key.count)].elementsEqual(key) {
            let digits = bytes[(start + key.count)...].prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
            return digits.isEmpty || digits.count > 18 ? nil : Int64(String(decoding: digits, as: UTF8.self))
        }
        return nil
    }
}
