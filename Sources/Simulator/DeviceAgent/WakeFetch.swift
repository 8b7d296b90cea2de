import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import PushModel

/// The real work a plain agent's app can do during a background wake: one GET (through the fleet's
/// `HTTPClient`, the same client the iPhones' transfers use) with a deadline.
public enum WakeFetch {
    /// Whether `url` is one a wake can fetch: `http://` or `https://` with a host.
    public static func isValid(_ url: String) -> Bool {
        guard url.hasPrefix("http://") || url.hasPrefix("https://"), let request = try? HTTPClient.Request(url: url)
        else { return false }
        return !request.host.isEmpty
    }

    /// The completion result the response calls for: `newData` (2xx with a body), `noData` (204, 304 or an
    /// empty body) or `failed` (anything else, a connection error, or the deadline).
    public static func result(_ url: String, timeoutMilliseconds: Int64, http: HTTPClient) -> EventLoopFuture<
        CompletionResult
    > {
        http.get(url: url, deadline: .now() + .milliseconds(timeoutMilliseconds)).map { response in
            switch response.status.code {
            case 204, 304: return .noData
            case 200..<300: return (response.body?.readableBytes ?? 0) > 0 ? .newData : .noData
            default: return .failed
            }
        }.recover { _ in .failed }
    }
}
