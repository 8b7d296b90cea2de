/// A change someone waited for (a POST's 200, a device's registration) did not get into a commit within
/// the store's wait limit (`store.wait_limit_seconds`): it was dropped, never attempted, so it cannot
/// land later. The provider API answers it 503 ServiceUnavailable.
public struct StoreWaitExpired: Error, CustomStringConvertible, Sendable {
    public var limit: Duration

    public init(limit: Duration) { self.limit = limit }

    public var description: String { "the store took no commit for \(limit) (store.wait_limit_seconds)" }
}
