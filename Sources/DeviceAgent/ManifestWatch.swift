import AsyncHTTPClient
import DeviceRuntime
import NIOCore
import PushModel
import Synchronization

/// Learns a content server's versions and their publish times by reading its manifest every `every`
/// (for a server other than the built-in one: a team's own, or `pushgate origin` in another process).
/// A version published and superseded between two reads is missed; opens holding it count as without
/// known content.
public final class ManifestWatch: Sendable {
    private let seen = Mutex<[Int: Int64]>([:])
    private let task = Mutex<RepeatedTask?>(nil)
    private let url: String
    private let http: HTTPClient

    public init(origin: String, http: HTTPClient) {
        url = origin + "/manifest"
        self.http = http
    }

    /// Versions seen so far: number → publish time (ms).
    public var versions: [Int: Int64] { seen.withLock { $0 } }

    /// Reads the manifest now and then every `every`; `newVersion` is called for each version first seen.
    public func start(
        every: TimeAmount, on loop: any EventLoop, newVersion: @escaping @Sendable (Int, Int64) -> Void = { _, _ in }
    ) {
        let url = self.url
        let http = self.http
        let repeated = loop.scheduleRepeatedAsyncTask(initialDelay: .zero, delay: every) { [self] _ in
            http.get(url: url).map { response in
                guard response.status == .ok, let body = response.body,
                    let version = ContentManifest.version(of: body.readableBytesView), version > 0,
                    let at = ContentManifest.publishedAt(of: body.readableBytesView)
                else { return }
                let new = self.seen.withLock { $0.updateValue(at, forKey: version) == nil }
                if new { newVersion(version, at) }
            }.recover { _ in }
        }
        task.withLock { $0 = repeated }
    }

    public func stop() {
        task.withLock { $0?.cancel() }
    }
}
