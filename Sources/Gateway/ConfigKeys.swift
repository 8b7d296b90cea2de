import PushStore

/// Every configuration key, once: its name, default and meaning. The file, the environment
/// (`PUSHGATE_` + the name in upper case with `.` as `_`) and the `--set name=value` flag all address
/// these names; `pushgate config` prints this table and Config/pushgate.yaml mirrors it.
public struct ConfigKey: Sendable, Hashable {
    public let name: String
    public let defaultValue: String
    public let doc: String

    public var environmentVariable: String {
        "PUSHGATE_" + name.uppercased().replacingOccurrences(of: ".", with: "_")
    }
}

public enum ConfigKeys {
    public static let all: [ConfigKey] = core + devices + policy + admin + store

    static let core: [ConfigKey] = [
        .init(
            name: "environment", defaultValue: "development",
            doc:
                "APNs environment this gateway plays: development or production. Keys and certificates limited to the other one are refused."
        ),
        .init(
            name: "data_dir", defaultValue: "./data",
            doc: "Directory for the gateway's files: development TLS certificates, registered keys and device tokens."),
        .init(
            name: "log.level", defaultValue: "info",
            doc: "Log level: trace, debug, info, notice, warning, error, critical."),
        .init(
            name: "log.modules", defaultValue: "",
            doc:
                "Levels for single modules, over log.level: e.g. store=debug,devices=warning. Modules: provider, devices, store, cluster, admin."
        ),
        .init(name: "event_loops", defaultValue: "0", doc: "Event-loop threads for network I/O; 0 means one per core."),
        .init(
            name: "shutdown.grace_seconds", defaultValue: "10",
            doc: "On SIGTERM/SIGINT, how long in-flight requests may take before connections are closed."),

        .init(
            name: "provider.tls.enabled", defaultValue: "true",
            doc: "Serve the provider API over TLS (HTTP/2, ALPN h2; clients offering no ALPN get HTTP/2 too)."),
        .init(name: "provider.tls.host", defaultValue: "127.0.0.1", doc: "Address the TLS provider listener binds to."),
        .init(
            name: "provider.tls.port", defaultValue: "2197",
            doc: "Port of the TLS provider listener (APNs uses 443 and 2197)."),
        .init(
            name: "provider.tls.certificate", defaultValue: "",
            doc:
                "PEM certificate chain of the TLS listener. Empty: a development certificate is created in data_dir/tls on first start."
        ),
        .init(name: "provider.tls.private_key", defaultValue: "", doc: "PEM private key of provider.tls.certificate."),
        .init(
            name: "provider.tls.client_ca", defaultValue: "",
            doc:
                "PEM CA that signs provider client certificates (certificate-based auth). Empty: the development CA in data_dir/tls."
        ),
        .init(
            name: "provider.h2c.enabled", defaultValue: "true",
            doc: "Serve the provider API as cleartext HTTP/2 with prior knowledge (h2c), for local use and load tests."),
        .init(name: "provider.h2c.host", defaultValue: "127.0.0.1", doc: "Address the h2c provider listener binds to."),
        .init(name: "provider.h2c.port", defaultValue: "2198", doc: "Port of the h2c provider listener."),

        .init(
            name: "provider.device_token.min_length", defaultValue: "64",
            doc: "Shortest accepted device token, in hex characters."),
        .init(
            name: "provider.device_token.max_length", defaultValue: "64",
            doc: "Longest accepted device token, in hex characters (APNs tokens are 64)."),
        .init(
            name: "provider.rate.device_token.burst", defaultValue: "200",
            doc: "Requests one device token may receive in a burst before 429 TooManyRequests."),
        .init(
            name: "provider.rate.device_token.per_second", defaultValue: "20",
            doc: "Sustained requests per second per device token; 0 disables the limit."),
        .init(
            name: "provider.rate.team.burst", defaultValue: "400000",
            doc: "Requests one team may send in a burst before 429 TooManyRequests."),
        .init(
            name: "provider.rate.team.per_second", defaultValue: "200000",
            doc: "Sustained requests per second per team; 0 disables the limit."),

        .init(
            name: "provider.auth.keys_file", defaultValue: "",
            doc:
                "YAML file of registered provider keys (team, key id, public key, topics, environment). Empty: data_dir/provider-keys.yaml. Reloaded when it changes."
        ),
        .init(
            name: "provider.auth.certificates_file", defaultValue: "",
            doc:
                "YAML file of registered provider client certificates (SHA-256, team, topics, environment). Empty: data_dir/provider-certificates.yaml."
        ),
        .init(
            name: "provider.auth.token_lifetime_seconds", defaultValue: "3600",
            doc: "A provider token is valid this long after its iat (APNs: one hour)."),
        .init(
            name: "provider.auth.future_skew_seconds", defaultValue: "60",
            doc: "How far in the future a token's iat may be (clock skew) before it is InvalidProviderToken."),
        .init(
            name: "provider.auth.token_update_burst", defaultValue: "2",
            doc: "Token changes a connection may make in a burst before 429 TooManyProviderTokenUpdates."),
        .init(
            name: "provider.auth.token_update_interval_seconds", defaultValue: "1200",
            doc:
                "One more token change per connection is allowed per this interval (APNs: refresh at most every 20 minutes)."
        ),
        .init(
            name: "provider.auth.max_failed_verifications", defaultValue: "16",
            doc: "Bad provider tokens one connection may present (each costs a signature check) before it is closed with GOAWAY."
        ),
        .init(
            name: "provider.auth.failed_verifications_per_second", defaultValue: "5",
            doc:
                "Failed token verifications per second per source address, across its connections (a burst of ten times this); past it, new tokens from that address are refused unverified. 0 disables the limit."
        ),

        .init(
            name: "provider.http2.max_concurrent_streams", defaultValue: "1000",
            doc: "SETTINGS_MAX_CONCURRENT_STREAMS advertised to providers; a stream over it is refused alone (RST_STREAM REFUSED_STREAM, safe to retry)."),
        .init(
            name: "provider.http2.max_header_list_size", defaultValue: "8192",
            doc: "SETTINGS_MAX_HEADER_LIST_SIZE in bytes; a request over it is answered 431 on its stream alone."),
        .init(
            name: "provider.http2.max_frame_size", defaultValue: "16384",
            doc: "SETTINGS_MAX_FRAME_SIZE in bytes (16384 to 16777215)."),
        .init(
            name: "provider.http2.idle_timeout_seconds", defaultValue: "3600",
            doc: "A connection without requests this long gets GOAWAY {\"reason\":\"IdleTimeout\"}; 0 disables."),
        .init(
            name: "provider.http2.connection_window_bytes", defaultValue: "1048576",
            doc: "Receive window kept open per provider connection."),
        .init(
            name: "provider.handshake_timeout_seconds", defaultValue: "5",
            doc: "A provider connection that has not finished its TLS handshake and HTTP/2 preface within this time is closed."
        ),
        .init(
            name: "provider.max_connections", defaultValue: "0",
            doc:
                "Provider connections open at once (TLS and h2c together); more are closed at accept. 0: a tenth of the process's descriptor limit (at least 64)."
        ),
        .init(
            name: "provider.max_connections_per_address", defaultValue: "500",
            doc: "Provider connections open at once from one source address; 0: no cap."),

        .init(
            name: "devices.tokens_file", defaultValue: "",
            doc:
                "YAML file of device tokens registered by `pushgate tokens`. Empty: data_dir/device-tokens.yaml. Reloaded when it changes."
        ),
        .init(
            name: "devices.reload_seconds", defaultValue: "1",
            doc: "How often the keys, certificates and tokens files are checked for changes; 0 disables reloading."),
    ]

    /// The store (docs/store.md).
    static let store: [ConfigKey] = [
        .init(
            name: "store.backend", defaultValue: "sqlite",
            doc:
                "Where accepted notifications, devices, tokens and budgets are kept: sqlite (a file in data_dir), postgres (store.postgres.url), or memory (nothing survives a restart; same as `serve --ephemeral`)."
        ),
        .init(
            name: "store.sqlite.path", defaultValue: "",
            doc: "The SQLite database file (WAL mode). Empty: data_dir/pushgate.sqlite."),
        .init(
            name: "store.sqlite.synchronous", defaultValue: "full",
            doc:
                "full: a 200 is on disk (survives a power loss); normal: survives a crash of the process, not of the machine, and commits faster."
        ),
        .init(
            name: "store.postgres.url", defaultValue: "",
            doc:
                "With store.backend postgres: postgres://user:password@host:port/database (plain TCP; loopback or a trusted network)."
        ),
        .init(
            name: "store.postgres.node_id", defaultValue: "",
            doc:
                "This node's name among the gateway nodes sharing the PostgreSQL database (each device's policy runs on its owner node; docs/store.md). Keep it stable across restarts. Empty: <hostname>:<devices.port>."
        ),
        .init(
            name: "store.postgres.lease_seconds", defaultValue: "10",
            doc:
                "A node whose lease (renewed every third of this) is older than this is gone: another node takes its devices over and delivers their pushes."
        ),
        .init(
            name: "store.postgres.sweep_seconds", defaultValue: "30",
            doc:
                "How often a node looks for pushes to its devices that no policy has decided and that are older than this (none in normal operation; each found is logged and counted)."
        ),
        .init(
            name: "store.retention_seconds", defaultValue: "86400",
            doc:
                "How long delivered and discarded notifications stay in the store (for lookups) before they are pruned."
        ),
        .init(
            name: "store.prune_seconds", defaultValue: "60",
            doc: "How often finished notifications past the retention are pruned and expired ones marked."),
    ]

    /// The admin API.
    static let admin: [ConfigKey] = [
        .init(
            name: "admin.enabled", defaultValue: "true",
            doc: "Serve the admin API (lookups by apns-id and token, counters)."),
        .init(
            name: "admin.host", defaultValue: "127.0.0.1",
            doc: "Address the admin API binds to; anything but loopback requires admin.token."),
        .init(name: "admin.port", defaultValue: "2201", doc: "Port of the admin API (HTTP/1.1, JSON)."),
        .init(
            name: "admin.token", defaultValue: "",
            doc: "Bearer token the admin API requires (authorization: Bearer <token>); empty: none (loopback only)."),
    ]

    /// The device port (docs/device-protocol.md).
    static let devices: [ConfigKey] = [
        .init(name: "devices.host", defaultValue: "127.0.0.1", doc: "Address the device port (WebSocket) binds to."),
        .init(
            name: "devices.port", defaultValue: "2199",
            doc: "Port of the plain WebSocket device listener; 0 picks a free port."),
        .init(
            name: "devices.tls.enabled", defaultValue: "true",
            doc: "Also serve devices over WebSocket with TLS (the provider listener's certificate)."),
        .init(name: "devices.tls.port", defaultValue: "2200", doc: "Port of the TLS device listener."),
        .init(
            name: "devices.keep_alive_seconds", defaultValue: "60",
            doc: "Keep-alive interval devices are told to use (each adds its own phase and jitter)."),
        .init(
            name: "devices.message_burst", defaultValue: "200",
            doc: "Messages a device may send in a burst before it is closed as flooding."),
        .init(
            name: "devices.messages_per_second", defaultValue: "50",
            doc: "Sustained messages per second a device may send."),
        .init(
            name: "devices.not_reading_timeout_seconds", defaultValue: "30",
            doc:
                "A device that does not read its messages, or acknowledges none of the pushes sent to it, for this long is closed (they are sent again on its next connection)."
        ),
        .init(
            name: "devices.delivery_window", defaultValue: "64",
            doc: "Pushes written to a device and not yet acknowledged, at most; the rest wait their turn in its queue."),
        .init(
            name: "devices.max_waiting", defaultValue: "10000",
            doc:
                "Pushes that may wait for one device (queued or written, not acknowledged) before POSTs to its tokens get 429 TooManyRequests."
        ),
        .init(
            name: "devices.hello_timeout_seconds", defaultValue: "10",
            doc: "A connection that does not say hello (or register) within this time is closed."),
        .init(
            name: "devices.max_frame_bytes", defaultValue: "65536", doc: "Largest WebSocket message a device may send."),
        .init(
            name: "devices.enrolment_secret", defaultValue: "",
            doc:
                "Secret a device's register must carry (pushgate simulate --enrolment-secret). Empty: the gateway makes one in data_dir/enrolment-secret on first start, which pushgate simulate reads from there."
        ),
        .init(
            name: "devices.enrolments_per_minute_per_address", defaultValue: "60",
            doc:
                "Devices one source address may register per minute (a burst of as many); more are refused (enrolment_limited). Loopback is spared (pushgate simulate enrols whole fleets from it). 0: no limit."
        ),
        .init(
            name: "devices.prune_after_days", defaultValue: "0",
            doc:
                "Devices that have not connected for this many days are removed (as by pushgate devices remove: their tokens answer 410). 0: kept for good."
        ),
        .init(
            name: "devices.upgrade_timeout_seconds", defaultValue: "5",
            doc:
                "A device connection that has not finished its TLS handshake and WebSocket upgrade within this time is closed (then devices.hello_timeout_seconds runs)."
        ),
        .init(
            name: "devices.max_connections", defaultValue: "0",
            doc:
                "Device connections open at once (plain and TLS together); more are closed at accept. 0: the descriptor limit less the provider's share and 256 kept for the store, the admin API and files."
        ),
        .init(
            name: "devices.max_connections_per_address", defaultValue: "0",
            doc: "Device connections open at once from one source address; 0: no cap (a simulated fleet connects from one address)."
        ),
    ]

    /// The silent-push policy (docs/throttling.md).
    static let policy: [ConfigKey] = [
        .init(
            name: "policy.budget.capacity", defaultValue: "3",
            doc:
                "Silent wakes an app may get in a burst (token bucket per device and app; Apple: two or three per hour)."
        ),
        .init(
            name: "policy.budget.refill_seconds", defaultValue: "1200",
            doc: "One silent wake is refilled per this many seconds."),
        .init(
            name: "policy.held.storage", defaultValue: "newest_only",
            doc:
                "What an app keeps while over budget or unreachable: newest_only (as APNs: the newest silent push; one push for an offline device) or up_to (policy.held.limit)."
        ),
        .init(
            name: "policy.held.limit", defaultValue: "100",
            doc: "With policy.held.storage up_to: pushes kept per app, the oldest discarded beyond it (at most 100)."),
        .init(
            name: "policy.piggyback.alert_scope", defaultValue: "all_apps",
            doc: "Held pushes an alerting delivery carries: all_apps on the device, or same_app only."),
        .init(
            name: "policy.completion.deadline_seconds", defaultValue: "30",
            doc: "Seconds an app has to call its completion handler after a background wake (iOS: 30)."),
        .init(
            name: "policy.completion.late_window_seconds", defaultValue: "600",
            doc: "A completion this long after a missed deadline is still recorded as late."),
        .init(
            name: "policy.storage.default_seconds", defaultValue: "2592000",
            doc: "How long a push without apns-expiration is kept (APNs: up to 30 days)."),
        .init(
            name: "policy.strikes.miss", defaultValue: "1",
            doc: "Strikes a missed completion deadline adds (the app was terminated)."),
        .init(name: "policy.strikes.failed", defaultValue: "0.25", doc: "Strikes a 'failed' completion adds."),
        .init(
            name: "policy.strikes.no_data_relief", defaultValue: "0.25",
            doc: "Strikes a timely 'noData' completion takes away."),
        .init(
            name: "policy.strikes.new_data_relief", defaultValue: "0.5",
            doc: "Strikes a timely 'newData' completion takes away."),
        .init(
            name: "policy.strikes.half_life_seconds", defaultValue: "21600",
            doc: "Strikes halve over this many seconds."),
        .init(
            name: "policy.cooling.base_seconds", defaultValue: "1800",
            doc:
                "After a missed deadline the bucket is emptied and refills slowly for this long, doubled per strike beyond the first."
        ),
        .init(name: "policy.cooling.max_seconds", defaultValue: "86400", doc: "The longest cooling period."),
        .init(
            name: "policy.cooling.slowdown", defaultValue: "4",
            doc: "How many times slower the bucket refills while cooling."),
    ]

    public static let byName: [String: ConfigKey] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
}

extension ConfigKeys {
    /// A value as `pushgate config` shows it: secrets (the admin token, a PostgreSQL password) masked.
    public static func printable(_ name: String, _ value: String) -> String {
        switch name {
        case "admin.token", "devices.enrolment_secret": value.isEmpty ? value : "***"
        case "store.postgres.url": PostgresStore.redacted(value)
        default: value
        }
    }
}
