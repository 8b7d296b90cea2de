import AsyncHTTPClient
import DeviceProtocol
import DeviceRuntime
import NIOCore
import NIOHTTP1
import PushModel
import Synchronization

/// Learns a content server's versions and their publish times by reading its manifest every `every`
/// (for a server other than the built-in one: a team's own, or `pushgate origin` in another process).
/// A version published and superseded between two reads is missed; opens holding it count as without
/// known content.
public final class ManifestWatch: Sendable {
    /// Versions seen (number → publish time), and whether the manifest was read once.
    private let seen = Mutex<(versions: [Int: Int64], read: Bool)>(([:], false))
    private let task = Mutex<RepeatedTask?>(nil)
    private let url: String
    private let http: HTTPClient

    public init(origin: String, http: HTTPClient) {
        url = origin + "/manifest"
        self.http = http
    }

    /// Versions seen so far: number → publish time (ms).
    public var versions: [Int: Int64] { seen.withLock { $0.versions } }

    /// Reads the manifest now and then every `every`; `newVersion` is called for each version first seen
    /// after the first read (what the first read finds was published before the watch began).
    public func start(
        every: TimeAmount, on loop: any EventLoop, newVersion: @escaping @Sendable (Int, Int64) -> Void = { _, _ in }
    ) {
        let url = self.url
        let http = self.http
        let repeated = loop.scheduleRepeatedAsyncTask(initialDelay: .zero, delay: every) { [self] _ in
            http.get(url: url).map { response in
                guard response.status == .ok, let body = response.body else { return }
                let version = ContentManifest.version(of: body.readableBytesView) ?? 0
                let at = ContentManifest.publishedAt(of: body.readableBytesView)
                let announce = self.seen.withLock { seen -> Bool in
                    defer { seen.read = true }
                    guard version > 0, let at else { return false }
                    return seen.versions.updateValue(at, forKey: version) == nil && seen.read
                }
                if announce, let at { newVersion(version, at) }
            }.recover { _ in }
        }
        task.withLock { $0 = repeated }
    }

    public func stop() {
        task.withLock { $0?.cancel() }
    }
}
