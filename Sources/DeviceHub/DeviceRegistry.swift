import Crypto
import Foundation
import PushModel
import PushPolicy
import Synchronization

/// Who the devices are: their identities and secrets, the apps they installed and the tokens issued
/// for them. It answers the provider API's token lookups (`DeviceDirectory`). In memory for now; the
/// store issue makes it durable.
public final class DeviceRegistry: DeviceDirectory {
    struct Device {
        var id: String
        var slot: DeviceID
        var secretHash: [UInt8]
        var apps: [String: DeviceToken]
    }

    struct TokenRecord {
        var slot: DeviceID
        var status: TokenStatus
    }

    private struct State {
        var devices: [String: Device] = [:]
        var bySlot: [String] = []
        var tokens: [DeviceToken: TokenRecord] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    // MARK: Provider lookups

    public func status(of token: DeviceToken) -> TokenStatus? {
        state.withLock { $0.tokens[token]?.status }
    }

    /// The device (its id and slot) a token belongs to, and the token's status, for lookups.
    public func lookup(_ token: DeviceToken) -> (deviceID: String, slot: DeviceID, status: TokenStatus)? {
        state.withLock { state in
            guard let record = state.tokens[token], Int(record.slot) < state.bySlot.count else { return nil }
            return (state.bySlot[Int(record.slot)], record.slot, record.status)
        }
    }

    /// The device a token belongs to, for delivery.
    public func slot(of token: DeviceToken) -> DeviceID? {
        state.withLock { $0.tokens[token]?.slot }
    }

    // MARK: Devices

    /// A new device: its id, its secret (shown once), and its slot.
    public func register() -> (id: String, secret: String, slot: DeviceID) {
        let id = UUID().uuidString.lowercased()
        let secret = Self.randomHex(bytes: 32)
        let slot = state.withLock { state -> DeviceID in
            let slot = DeviceID(state.bySlot.count)
            state.bySlot.append(id)
            state.devices[id] = Device(id: id, slot: slot, secretHash: Self.hash(secret), apps: [:])
            return slot
        }
        return (id, secret, slot)
    }

    /// The device's slot when the secret is right; nil otherwise (no hint which part was wrong).
    public func authenticate(id: String, secret: String) -> DeviceID? {
        let presented = Self.hash(secret)
        return state.withLock { state in
            guard let device = state.devices[id], Self.constantTimeEqual(device.secretHash, presented) else {
                return nil
            }
            return device.slot
        }
    }

    public func apps(of slot: DeviceID) -> [(bundleID: String, token: DeviceToken)] {
        state.withLock { state in
            guard Int(slot) < state.bySlot.count, let device = state.devices[state.bySlot[Int(slot)]] else { return [] }
            return device.apps.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 }
        }
    }

    /// Installs an app and issues its token; installing again returns the same token.
    public func install(_ bundleID: String, on slot: DeviceID) -> DeviceToken? {
        state.withLock { state in
            guard Int(slot) < state.bySlot.count, var device = state.devices[state.bySlot[Int(slot)]] else {
                return nil
            }
            if let token = device.apps[bundleID] { return token }
            let token = DeviceToken(Self.randomHex(bytes: 32))!
            device.apps[bundleID] = token
            state.devices[device.id] = device
            state.tokens[token] = TokenRecord(slot: slot, status: .active(bundleID: bundleID))
            return token
        }
    }

    /// Uninstalls an app: its token now answers 410 Unregistered with this time.
    @discardableResult
    public func uninstall(_ bundleID: String, on slot: DeviceID, at now: UnixTime) -> Bool {
        state.withLock { state in
            guard Int(slot) < state.bySlot.count, var device = state.devices[state.bySlot[Int(slot)]],
                let token = device.apps.removeValue(forKey: bundleID)
            else { return false }
            state.devices[device.id] = device
            state.tokens[token] = TokenRecord(slot: slot, status: .unregistered(bundleID: bundleID, since: now))
            return true
        }
    }

    public var deviceCount: Int { state.withLock { $0.devices.count } }

    static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in
            let byte = UInt8.random(in: 0...255, using: &generator)
            return byte < 16 ? "0" + String(byte, radix: 16) : String(byte, radix: 16)
        }.joined()
    }

    static func hash(_ secret: String) -> [UInt8] { Array(SHA256.hash(data: Data(secret.utf8))) }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}

/// Looks tokens up in several directories, first answer wins: devices' own tokens, then scripted ones.
public struct CombinedDirectory: DeviceDirectory {
    let directories: [any DeviceDirectory]

    public init(_ directories: [any DeviceDirectory]) { self.directories = directories }

    public func status(of token: DeviceToken) -> TokenStatus? {
        for directory in directories {
            if let status = directory.status(of: token) { return status }
        }
        return nil
    }
}
