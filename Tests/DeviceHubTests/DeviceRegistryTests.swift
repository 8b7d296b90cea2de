import PushModel
import PushStore
import Testing

@testable import DeviceHub

/// The registry every node keeps of the whole fleet, in its compact form: what it answers is what the
/// store said, whatever the order of devices, tokens and their changes.
@Suite struct DeviceRegistryTests {
    static let t0 = UnixTime(milliseconds: 1_795_000_000_000)

    /// 64 hex digits: `n` (below 16) written 64 times.
    static func token(_ n: Int) -> String { String(repeating: String(n, radix: 16), count: 64) }

    @Test func aRestoredFleetAnswersAsTheStoreSays() throws {
        let registry = DeviceRegistry()
        let secret = "s3cret"
        let devices = (0..<3).map {
            StoredDevice(
                id: "device-\($0)", secretHash: DeviceRegistry.hash(secret), createdAt: Self.t0, owner: "node-\($0 % 2)"
            )
        }
        let tokens = [
            StoredToken(token: Self.token(1), deviceID: "device-0", bundleID: "com.example.a", unregisteredAt: nil),
            StoredToken(token: Self.token(2), deviceID: "device-0", bundleID: "com.example.b", unregisteredAt: nil),
            StoredToken(token: Self.token(3), deviceID: "device-1", bundleID: "com.example.a", unregisteredAt: nil),
            // Uninstalled later: the token answers 410 from then, the app is gone from the device.
            StoredToken(
                token: Self.token(3), deviceID: "device-1", bundleID: "com.example.a",
                unregisteredAt: Self.t0.adding(seconds: 5)),
            StoredToken(token: Self.token(6), deviceID: "device-2", bundleID: "com.example.a", unregisteredAt: nil),
            StoredToken(
                token: Self.token(4), deviceID: "device-2", bundleID: "com.example.a", unregisteredAt: nil,
                activity: "live-1"),
            StoredToken(token: Self.token(5), deviceID: "nobody", bundleID: "com.example.a", unregisteredAt: nil),
        ]
        registry.restore(devices: devices, tokens: tokens)

        #expect(registry.deviceCount == 3)
        #expect((0..<3).map { registry.slot(ofDevice: "device-\($0)") } == [0, 1, 2])
        #expect(registry.deviceID(of: 2) == "device-2")
        #expect(registry.deviceID(of: 3) == nil)
        #expect(registry.owner(of: 1) == "node-1")
        #expect(registry.apps(of: 0).map(\.bundleID) == ["com.example.a", "com.example.b"])
        #expect(registry.apps(of: 1).isEmpty, "uninstalled")
        #expect(registry.status(of: DeviceToken(Self.token(2))!) == .active(bundleID: "com.example.b"))
        #expect(
            registry.status(of: DeviceToken(Self.token(3))!)
                == .unregistered(bundleID: "com.example.a", since: Self.t0.adding(seconds: 5)))
        let activity = try #require(registry.lookup(DeviceToken(Self.token(4))!))
        #expect(
            activity.deviceID == "device-2" && activity.slot == 2
                && activity.status == .active(bundleID: "com.example.a"))
        #expect(registry.status(of: DeviceToken(Self.token(5))!) == nil, "a token of no known device")
        #expect(registry.activityToken("com.example.a", activity: "live-1", on: 2) == DeviceToken(Self.token(4)))

        // The secret's hash, kept inline, matches the secret only.
        #expect(registry.authenticate(id: "device-1", secret: secret) == 1)
        #expect(registry.authenticate(id: "device-1", secret: "s3cres") == nil)
        #expect(registry.authenticate(id: "device-9", secret: secret) == nil)
        // A later claim moves the owner; an older one does not.
        #expect(registry.setOwner(0, "node-2", claim: 2) == (true, "node-0"))
        #expect(registry.setOwner(0, "node-3", claim: 1) == (false, nil))
        #expect(registry.owner(of: 0) == "node-2")
        // Whether a claim's state is older than what is known: a later claim and its owner, or none.
        #expect(registry.owner(of: 0, claimedAfter: 1) == "node-2")
        #expect(registry.owner(of: 0, claimedAfter: 2) == nil, "the same claim is not a later one")
        #expect(registry.owner(of: 9, claimedAfter: 0) == nil, "no such device")
    }

    @Test func aStoredHashOfTheWrongLengthNeverMatches() {
        let registry = DeviceRegistry()
        registry.restore(
            devices: [StoredDevice(id: "short", secretHash: [1, 2, 3], createdAt: Self.t0)], tokens: [])
        #expect(registry.slot(ofDevice: "short") == 0)
        #expect(registry.authenticate(id: "short", secret: "") == nil)
        #expect(DeviceRegistry.SecretHash(Array(repeating: 0, count: 31)) == nil)
        let hash = DeviceRegistry.hash("x")
        var other = hash
        other[31] ^= 1
        #expect(DeviceRegistry.SecretHash(hash)!.matches(DeviceRegistry.SecretHash(hash)!))
        #expect(!DeviceRegistry.SecretHash(hash)!.matches(DeviceRegistry.SecretHash(other)!), "the last byte counts")
    }

    @Test func installsUninstallsAndRemovalsKeepTokensAndAppsTogether() {
        let registry = DeviceRegistry()
        let (id, secret, slot) = registry.register()
        #expect(registry.authenticate(id: id, secret: secret) == slot)
        let a = registry.install("com.example.a", on: slot)
        let b = registry.install("com.example.b", on: slot)
        #expect(a != nil && b != nil && a != b)
        #expect(registry.install("com.example.a", on: slot) == a, "installing again: the same token")
        let now = Self.t0
        #expect(registry.uninstall("com.example.a", on: slot, at: now))
        #expect(!registry.uninstall("com.example.a", on: slot, at: now), "not installed any more")
        #expect(registry.status(of: a!) == .unregistered(bundleID: "com.example.a", since: now))
        #expect(registry.apps(of: slot).map(\.bundleID) == ["com.example.b"])
        let removed = registry.remove(id, at: now.adding(seconds: 1))
        #expect(removed?.slot == slot && removed?.bundleIDs == ["com.example.b"])
        #expect(registry.status(of: b!) == .unregistered(bundleID: "com.example.b", since: now.adding(seconds: 1)))
        #expect(registry.authenticate(id: id, secret: secret) == nil, "removed devices cannot connect")
        #expect(!registry.isActive(id))
    }

    /// Tokens and ids are kept as bits when they are what this gateway issues, as text otherwise: either
    /// way they read back as they came, and ids that differ only in case stay two devices.
    @Test func keysGiveBackWhatTheyKeep() {
        for hex in [
            Self.token(10), "00ff" + String(repeating: "9a", count: 30), "abcd", String(repeating: "e", count: 200),
        ] {
            let token = DeviceToken(hex, lengths: 2...4096)!
            #expect(token.hex == hex && DeviceToken(token.hex, lengths: 2...4096) == token)
            #expect(token.isInline == (hex.count == 64))
        }
        let lower = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
        guard case .uuid = DeviceKey(lower) else { Issue.record("a lower-case UUID: inline"); return }
        for id in [lower, lower.uppercased(), "device-1", "", lower + " "] { #expect(DeviceKey(id).id == id) }
        #expect(DeviceKey(lower) != DeviceKey(lower.uppercased()))

        let registry = DeviceRegistry()
        registry.restore(
            devices: [lower, lower.uppercased()].map {
                StoredDevice(id: $0, secretHash: DeviceRegistry.hash("s"), createdAt: Self.t0)
            }, tokens: [])
        #expect(registry.slot(ofDevice: lower) == 0 && registry.slot(ofDevice: lower.uppercased()) == 1)
        #expect(registry.deviceID(of: 1) == lower.uppercased())
    }

    /// Keys of either form live side by side in one map, each found, replaced and removed by itself;
    /// and a device's record stays at 96 bytes (each node keeps one for every device of the fleet).
    @Test func bothFormsShareAMapAndTheRecordStaysSmall() {
        var map = CompactMap<DeviceToken, Int>()
        let inline = DeviceToken(Self.token(7))!
        let text = DeviceToken("abcd", lengths: 2...4096)!
        map[inline] = 1
        map[text] = 2
        #expect(map[inline] == 1 && map[text] == 2 && map.count == 2)
        map[inline] = 3
        map[text] = nil
        #expect(map[inline] == 3 && map[text] == nil && map.count == 1)
        #expect(map[DeviceToken(Self.token(8))!] == nil)

        let registry = DeviceRegistry()
        registry.restore(
            devices: [StoredDevice(id: "device-1", secretHash: DeviceRegistry.hash("s"), createdAt: Self.t0)],
            tokens: [
                StoredToken(token: Self.token(7), deviceID: "device-1", bundleID: "com.example.a", unregisteredAt: nil),
                StoredToken(token: "abcd", deviceID: "device-1", bundleID: "com.example.b", unregisteredAt: nil),
            ])
        #expect(registry.slot(of: inline) == 0 && registry.slot(of: text) == 0)
        #expect(registry.status(of: text) == .active(bundleID: "com.example.b"))

        #expect(MemoryLayout<DeviceRegistry.Device>.stride <= 96, "docs/store.md, Memory")
    }
}
