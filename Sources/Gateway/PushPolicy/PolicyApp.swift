/// An app as the policy engine knows it: its bundle id, interned (`ThrottleEngine.app(_:)`). A caller
/// that names the same few apps millions of times (a forecast's app-state changes, completions and
/// acknowledgements) takes it once, instead of the engine hashing the bundle id on every call.
public struct PolicyApp: Hashable, Sendable {
    let id: UInt32
}
