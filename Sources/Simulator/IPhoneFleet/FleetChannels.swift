import DeviceRuntime
import Foundation
import LoadGenerator
import NIOCore
import ProviderAuth
import ProviderClient
import PushModel
import WallClock

/// The broadcast channels a fleet of iPhones follows: for every app whose Live Activities follow
/// channels (a kind's `channels`), that many channels made through the gateway's channel-management API
/// before the devices start (Most Recent Message Stored: a device that reconnects is given the newest).
public enum FleetChannels {
    /// Each app's Live Activity strategy across the mix: its priority and the most channels any kind gives it.
    public static func apps(of mix: IPhoneMix) -> [String: (priority: Int, channels: Int)] {
        var apps: [String: (priority: Int, channels: Int)] = [:]
        for kind in mix.kinds {
            for app in kind.profile.apps where app.live_activities > 0 {
                let channels = max(apps[app.bundle_id]?.channels ?? 0, app.channels)
                apps[app.bundle_id] = (app.live_activity_priority, channels)
            }
        }
        return apps
    }

    /// Creates the channels the mix's apps follow, over a connection to the channel API at `url`
    /// (`flag` names it in errors).
    public static func create(
        for mix: IPhoneMix, url: String, flag: String, signer: ProviderTokenSigner?, group: any EventLoopGroup
    ) async throws -> [String: [String]] {
        let wanted = apps(of: mix).filter { $0.value.channels > 0 }
        guard !wanted.isEmpty else { return [:] }
        let target = try ServerURL.parse(url, flag: flag)
        let client: ProviderClient
        do {
            client = try await ProviderClient.connect(
                host: target.host, port: target.port,
                security: target.tls ? .tls(trustRoots: [], alpn: ["h2"], clientCertificate: nil) : .cleartext,
                group: group)
        } catch {
            throw IPhoneFleetError.failure(
                "\(flag) \(url): cannot connect to the channel-management API (channels.h2c.port, channels.tls.port): \(error)"
            )
        }
        do {
            let channels = try await create(wanted, on: client, url: url, flag: flag, signer: signer)
            await client.close()
            return channels
        } catch {
            await client.close()
            throw error
        }
    }

    private static func create(
        _ wanted: [String: (priority: Int, channels: Int)], on client: ProviderClient, url: String, flag: String,
        signer: ProviderTokenSigner?
    ) async throws -> [String: [String]] {
        let authorization = try signer.map { "bearer " + (try $0.token(issuedAt: UnixTime.now())) }
        var channels: [String: [String]] = [:]
        for (bundleID, app) in wanted.sorted(by: { $0.key < $1.key }) {
            for _ in 0..<app.channels {
                let response = try await client.post(
                    path: "/1/apps/\(bundleID)/channels",
                    headers: authorization.map { [("authorization", $0)] } ?? [],
                    body: Array(#"{"message-storage-policy": 1, "push-type": "LiveActivity"}"#.utf8))
                guard response.status == 201, let id = response.header("apns-channel-id") else {
                    throw IPhoneFleetError.failure(
                        "\(flag) \(url): creating a channel for \(bundleID) was answered \(response.status) \(response.bodyText)"
                    )
                }
                channels[bundleID, default: []].append(id)
            }
        }
        return channels
    }

    /// What each app's backend sends to its kept Live Activities, with the channels made for it.
    public static func announcements(of mix: IPhoneMix, channels: [String: [String]])
        -> [String: ContentAnnouncer.LiveActivities]
    {
        apps(of: mix).reduce(into: [:]) { result, app in
            result[app.key] = ContentAnnouncer.LiveActivities(
                priority: app.value.priority, channels: channels[app.key] ?? [])
        }
    }
}
