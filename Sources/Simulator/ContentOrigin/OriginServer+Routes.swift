import Foundation
import NIOHTTP1
import PushModel
import Synchronization

/// What the content server answers to each request (the list is on `OriginServer`), apart from how an
/// item's bytes go out (`ItemStreamHandler`).
extension OriginServer {
    enum Answer {
        case json(status: HTTPResponseStatus, String)
        case item(ContentCatalog.Version, from: Int, bytesPerSecond: Int)
    }

    func answer(_ head: HTTPRequestHead) -> Answer {
        let parts = head.uri.split(separator: "?", maxSplits: 1)
        let path = String(parts.first ?? "")
        let query = parts.count > 1 ? parts[1] : ""
        switch (head.method, path) {
        case (.GET, "/manifest"):
            return .json(status: .ok, catalog.withLock { $0.manifestJSON })
        case (.POST, "/publish"):
            let version = publish()
            return .json(status: .ok, #"{"version":\#(version.version),"published_at":\#(version.publishedAt)}"#)
        case (.GET, "/log"):
            let data = (try? JSONEncoder().encode(log.all)) ?? Data("[]".utf8)
            return .json(status: .ok, String(decoding: data, as: UTF8.self))
        case (.GET, _) where path.hasPrefix("/items/"):
            guard let number = Int(path.dropFirst("/items/".count)),
                var version = catalog.withLock({ $0.version(number) })
            else { return .json(status: .notFound, #"{"error":"no such item"}"#) }
            if let text = Self.parameter("bytes", in: query) {
                guard let bytes = Int(text), (1...Self.largestItem).contains(bytes) else {
                    return .json(status: .badRequest, #"{"error":"bytes: from 1 to \#(Self.largestItem)"}"#)
                }
                version.bytes = bytes
            }
            var from = 0
            if let range = head.headers.first(name: "range") {
                guard range.hasPrefix("bytes="), range.hasSuffix("-"),
                    let start = Int(range.dropFirst("bytes=".count).dropLast()), start >= 0, start < version.bytes
                else { return .json(status: .rangeNotSatisfiable, #"{"error":"only bytes=<from>- within the item"}"#) }
                from = start
            }
            var rate = settings.linkBytesPerSecond
            if let slowdown = Self.parameter("slowdown", in: query).flatMap(Double.init), slowdown > 1, rate > 0 {
                rate = max(1, Int(Double(rate) / slowdown))
            }
            return .item(version, from: from, bytesPerSecond: rate)
        case (_, "/manifest"), (_, "/log"), (_, "/publish"):
            return .json(status: .methodNotAllowed, #"{"error":"method not allowed"}"#)
        default:
            return .json(status: .notFound, #"{"error":"not found"}"#)
        }
    }

    /// The largest item `?bytes=` may ask for (1 GiB).
    static let largestItem = 1 << 30

    static func parameter(_ name: String, in query: Substring) -> String? {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == name { return String(parts[1]) }
        }
        return nil
    }

    func record(_ head: HTTPRequestHead, status: Int, bytes: Int) {
        log.record(
            FetchLog.Entry(
                at: clock().milliseconds, device: head.headers.first(name: "x-device-id") ?? "", path: head.uri,
                status: status, bytes: bytes))
    }
}
