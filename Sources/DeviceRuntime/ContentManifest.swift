/// The content server's manifest as devices read it: `{"version":N,"published_at":ms,"item":{…}}`, the
/// version first. `pushgate origin` writes it; a team's own server can serve the same.
public enum ContentManifest {
    public static func json(version: Int, publishedAt: Int64, bytes: Int) -> String {
        #"{"version":\#(version),"published_at":\#(publishedAt),"item":{"version":\#(version),"bytes":\#(bytes),"path":"/items/\#(version)"}}"#
    }

    /// The version a manifest names; nil when it is not a manifest.
    public static func version(of body: some Collection<UInt8>) -> Int? {
        let bytes = Array(body)
        let key = Array(#""version":"#.utf8)
        guard bytes.count > key.count else { return nil }
        for start in 0...(bytes.count - key.count) where bytes[start..<(start + key.count)].elementsEqual(key) {
            let digits = bytes[(start + key.count)...].prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
            return digits.isEmpty || digits.count > 18 ? nil : Int(String(decoding: digits, as: UTF8.self))
        }
        return nil
    }
}
