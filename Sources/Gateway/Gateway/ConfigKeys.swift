import AdminAPI
import ConnectionLimits
import DeviceHub
import Foundation
import Logging
import NodeLinks
import NIOCore
import ProviderAPI
import PushModel
import PushPolicy
import PushStore

/// Every configuration key, once (`ConfigKey`: name, default, meaning, parser and range, and where
/// the value goes). `pushgate config` prints this table; Config/pushgate.yaml and the README's table
/// are made from it (`pushgate config --yaml`, `--markdown`).
public enum ConfigKeys {
    public static let all: [ConfigKey] = core + devices + policy + admin + store

    static let core: [ConfigKey] = [
        .choice(
            "environment", PushEnvironment.development,
            "APNs environment this gateway plays: development or production. Keys and certificates limited to the other one are refused.",
            to: \.provider.environment),
        .text(
            "data_dir", "./data", nonEmpty: true,
            "Directory for the gateway's files: development TLS certificates, registered keys and device tokens.",
            to: \.dataDirectory),
        .choice(
            "log.level", Logger.Level.info,
            "Log level: trace, debug, info, notice, warning, error, critical.", to: \.logLevel),
        .custom(
            "log.modules", "", expected: ModuleLogLevels.expected,
            "Levels for single modules, over log.level: e.g. store=debug,devices=warning. Modules: provider, channels, devices, store, cluster, admin.",
            parse: ModuleLogLevels.parse, set: { $0.moduleLogLevels = $1 }),
        .int(
            "event_loops", "0", in: 0...256,
            "Threads that run the gateway (`serve`): its sockets, its store's connections and its tasks; 0 means one per core.",
            to: \.eventLoops),
        .int(
            "shutdown.grace_seconds", "10", in: 0...3600,
            "On SIGTERM/SIGINT, how long in-flight requests may take before connections are closed.",
            to: \.shutdownGraceSeconds),
        .flag(
            "provider.tls.enabled", "true",
            "Serve the provider API over TLS (HTTP/2, ALPN h2; clients offering no ALPN get HTTP/2 too).",
            to: \.tlsListener.enabled),
        .text(
            "provider.tls.host", "127.0.0.1", nonEmpty: true, "Address the TLS provider listener binds to.",
            to: \.tlsListener.host),
        .int(
            "provider.tls.port", "2197", in: 0...65535,
            "Port of the TLS provider listener (APNs uses 443 and 2197).", to: \.tlsListener.port),
        tlsCertificate,
        tlsPrivateKey,
        .text(
            "provider.tls.client_ca", "",
            "PEM CA that signs provider client certificates (certificate-based auth). Empty: the development CA in data_dir/tls.",
            to: \.tls.clientCA),
        .flag(
            "provider.h2c.enabled", "true",
            "Serve the provider API as cleartext HTTP/2 with prior knowledge (h2c), for local use and load tests.",
            to: \.h2cListener.enabled),
        .text(
            "provider.h2c.host", "127.0.0.1", nonEmpty: true, "Address the h2c provider listener binds to.",
            to: \.h2cListener.host),
        .int("provider.h2c.port", "2198", in: 0...65535, "Port of the h2c provider listener.", to: \.h2cListener.port),
        deviceTokenMinLength,
        deviceTokenMaxLength,
        .int(
            "provider.rate.device_token.burst", "200", in: 0...Int(Int32.max),
            "Requests one device token may receive in a burst before 429 TooManyRequests.",
            to: \.provider.perDeviceTokenRate.burst),
        .number(
            "provider.rate.device_token.per_second", "20", in: 0...1e9,
            "Sustained requests per second per device token; 0 disables the limit.",
            to: \.provider.perDeviceTokenRate.perSecond),
        .int(
            "provider.rate.team.burst", "400000", in: 0...Int(Int32.max),
            "Requests one team may send in a burst before 429 TooManyRequests.", to: \.provider.perTeamRate.burst),
        .number(
            "provider.rate.team.per_second", "200000", in: 0...1e9,
            "Sustained requests per second per team; 0 disables the limit.", to: \.provider.perTeamRate.perSecond),
        .text(
            "provider.auth.keys_file", "",
            "YAML file of registered provider keys (team, key id, public key, topics, environment). Empty: data_dir/provider-keys.yaml. Reloaded when it changes.",
            to: \.keysFile),
        .text(
            "provider.auth.certificates_file", "",
            "YAML file of registered provider client certificates (SHA-256, team, topics, environment). Empty: data_dir/provider-certificates.yaml.",
            to: \.certificatesFile),
        .int(
            "provider.auth.token_lifetime_seconds", "3600", in: 1...(365 * 86400),
            "A provider token is valid this long after its iat (APNs: one hour).",
            to: \.provider.auth.tokenLifetimeSeconds),
        .int(
            "provider.auth.future_skew_seconds", "60", in: 0...86400,
            "How far in the future a token's iat may be (clock skew) before it is InvalidProviderToken.",
            to: \.provider.auth.allowedFutureSkewSeconds),
        .int(
            "provider.auth.token_update_burst", "2", in: 0...1_000_000,
            "Token changes a connection may make in a burst before 429 TooManyProviderTokenUpdates.",
            to: \.provider.auth.tokenUpdateBurst),
        .int(
            "provider.auth.token_update_interval_seconds", "1200", in: 1...(365 * 86400),
            "One more token change per connection is allowed per this interval (APNs: refresh at most every 20 minutes).",
            to: \.provider.auth.tokenUpdateIntervalSeconds),
        .int(
            "provider.auth.max_failed_verifications", "16", in: 1...1_000_000,
            "Bad provider tokens one connection may present (each costs a signature check) before it is closed with GOAWAY.",
            to: \.provider.auth.maxFailedVerifications),
        .number(
            "provider.auth.failed_verifications_per_second", "5", in: 0...1_000_000,
            "Failed token verifications per second per source address, across its connections (a burst of ten times this); past it, new tokens from that address are refused unverified. 0 disables the limit."
        ) {
            $0.provider.auth.failedVerificationsPerAddress = RateLimit(
                burst: Int(($1 * 10).rounded(.up)), perSecond: $1)
        },
        .int(
            "provider.http2.max_concurrent_streams", "1000", in: 1...1_000_000,
            "SETTINGS_MAX_CONCURRENT_STREAMS advertised to providers; a stream over it is refused alone (RST_STREAM REFUSED_STREAM, safe to retry).",
            to: \.provider.http2.maxConcurrentStreams),
        .int(
            "provider.http2.max_header_list_size", "8192", in: 1024...(1 << 24),
            "SETTINGS_MAX_HEADER_LIST_SIZE in bytes; a request over it is answered 431 on its stream alone.",
            to: \.provider.http2.maxHeaderListSize),
        .int(
            "provider.http2.max_frame_size", "16384", in: 16384...16_777_215,
            "SETTINGS_MAX_FRAME_SIZE in bytes (16384 to 16777215).", to: \.provider.http2.maxFrameSize),
        .int(
            "provider.http2.idle_timeout_seconds", "3600", in: 0...(30 * 86400),
            "A connection without requests this long gets GOAWAY {\"reason\":\"IdleTimeout\"}; 0 disables.",
            to: \.provider.http2.idleTimeoutSeconds),
        .int(
            "provider.http2.connection_window_bytes", "1048576", in: 65535...Int(Int32.max),
            "Receive window kept open per provider connection.", to: \.provider.http2.connectionWindowSize),
        .int(
            "provider.http2.output_limit_bytes", "1048576", in: 65536...(1 << 30),
            "Answers written to a provider connection and not yet taken by its socket, past which the gateway stops reading that connection's requests until the client reads (resuming at half); what one connection may hold in memory.",
            to: \.provider.http2.outputLimitBytes),
        .int(
            "provider.http2.stalled_close_seconds", "30", in: 0...86400,
            "A provider connection whose reading has been stopped this long (its client reads nothing of its answers) is closed; 0: never.",
            to: \.provider.http2.stalledCloseSeconds),
        .int(
            "provider.http2.socket_send_buffer_bytes", "0", in: 0...(1 << 30),
            "SO_SNDBUF of each provider connection; 0: the kernel's default, autotuned up to net.ipv4.tcp_wmem's maximum (answers the kernel holds for a client that does not read come on top of provider.http2.output_limit_bytes).",
            to: \.provider.http2.socketSendBufferBytes),
        .int(
            "provider.handshake_timeout_seconds", "5", in: 1...3600,
            "A provider connection that has not finished its TLS handshake and HTTP/2 preface within this time is closed."
        ) {
            $0.providerGate.handshakeTimeout = .seconds(Int64($1))
        },
        .int(
            "provider.max_connections", "0", in: 0...10_000_000,
            "Provider connections open at once (TLS and h2c together); more are closed at accept. 0: a tenth of the process's descriptor limit (at least 64).",
            to: \.providerGate.maxConnections),
        .int(
            "provider.max_connections_per_address", "500", in: 0...10_000_000,
            "Provider connections open at once from one source address; 0: no cap.", to: \.providerGate.maxPerAddress),
        .flag(
            "channels.tls.enabled", "true",
            "Serve the broadcast channel-management API over TLS (HTTP/2; Apple: api-manage-broadcast…:2195), with the provider API's certificate and credentials.",
            to: \.channelTLSListener.enabled),
        .text(
            "channels.tls.host", "127.0.0.1", nonEmpty: true, "Address the TLS channel-management listener binds to.",
            to: \.channelTLSListener.host),
        .int(
            "channels.tls.port", "2195", in: 0...65535,
            "Port of the TLS channel-management listener (Apple's sandbox: 2195).",
            to: \.channelTLSListener.port),
        .flag(
            "channels.h2c.enabled", "true",
            "Serve the channel-management API as cleartext HTTP/2 (h2c), for local use.",
            to: \.channelH2CListener.enabled),
        .text(
            "channels.h2c.host", "127.0.0.1", nonEmpty: true, "Address the h2c channel-management listener binds to.",
            to: \.channelH2CListener.host),
        .int(
            "channels.h2c.port", "2196", in: 0...65535, "Port of the h2c channel-management listener.",
            to: \.channelH2CListener.port),
        .text(
            "devices.tokens_file", "",
            "YAML file of device tokens registered by `pushgate tokens`. Empty: data_dir/device-tokens.yaml. Reloaded when it changes.",
            to: \.tokensFile),
        .int(
            "devices.reload_seconds", "1", in: 0...86400,
            "How often the keys, certificates and tokens files are checked for changes; 0 disables reloading.",
            to: \.reloadSeconds),
    ]

    /// The device port (docs/device-protocol.md).
    static let devices: [ConfigKey] = [
        .text(
            "devices.host", "127.0.0.1", nonEmpty: true, "Address the device port (WebSocket) binds to.",
            to: \.deviceListener.host),
        .int(
            "devices.port", "2199", in: 0...65535,
            "Port of the plain WebSocket device listener; 0 picks a free port.", to: \.deviceListener.port),
        .flag(
            "devices.tls.enabled", "true",
            "Also serve devices over WebSocket with TLS (the provider listener's certificate).",
            to: \.deviceTLSListener.enabled),
        .int(
            "devices.tls.port", "2200", in: 0...65535, "Port of the TLS device listener.", to: \.deviceTLSListener.port),
        .int(
            "devices.keep_alive_seconds", "60", in: 1...86400,
            "Keep-alive interval devices are told to use (each adds its own phase and jitter).",
            to: \.hub.keepAliveSeconds),
        .int(
            "devices.message_burst", "200", in: 1...1_000_000,
            "Messages a device may send in a burst before it is closed as flooding (acknowledgements of pushes in flight to it are not counted).",
            to: \.hub.messageBurst),
        .number(
            "devices.messages_per_second", "50", in: 0.01...1_000_000,
            "Sustained messages per second a device may send.", to: \.hub.messagesPerSecond),
        .int(
            "devices.not_reading_timeout_seconds", "30", in: 1...86400,
            "A device that does not read its messages, or acknowledges none of the pushes sent to it, for this long is closed (they are sent again on its next connection).",
            to: \.hub.notReadingTimeoutSeconds),
        deliveryWindow,
        maxWaiting,
        .int(
            "devices.hello_timeout_seconds", "10", in: 1...3600,
            "A connection that does not say hello (or register) within this time is closed.",
            to: \.hub.helloTimeoutSeconds),
        .int(
            "devices.max_frame_bytes", "65536", in: 1024...(16 << 20), "Largest WebSocket message a device may send.",
            to: \.hub.maximumFrameBytes),
        .optionalText(
            "devices.enrolment_secret", secret: .masked,
            "Secret a device's register must carry (pushgate simulate --enrolment-secret). Empty: the gateway makes one in data_dir/enrolment-secret on first start, which pushgate simulate reads from there.",
            to: \.hub.enrolmentSecret),
        .int(
            "devices.enrolments_per_minute_per_address", "60", in: 0...1_000_000,
            "Devices one source address may register per minute (a burst of as many); more are refused (enrolment_limited). Loopback is spared (pushgate simulate enrols whole fleets from it). 0: no limit."
        ) {
            $0.hub.enrolmentsPerAddress = RateLimit(burst: $1, perSecond: Double($1) / 60)
        },
        .int(
            "devices.prune_after_days", "0", in: 0...36500,
            "Devices that have not connected for this many days are removed (as by pushgate devices remove: their tokens answer 410). 0: kept for good."
        ) {
            $0.hub.pruneAfterSeconds = Int64($1) * 86400
        },
        .int(
            "devices.upgrade_timeout_seconds", "5", in: 1...3600,
            "A device connection that has not finished its TLS handshake and WebSocket upgrade within this time is closed (then devices.hello_timeout_seconds runs)."
        ) {
            $0.deviceGate.handshakeTimeout = .seconds(Int64($1))
        },
        .int(
            "devices.max_connections", "0", in: 0...10_000_000,
            "Device connections open at once (plain and TLS together); more are closed at accept. 0: the descriptor limit less the provider's share and 256 kept for the store, the admin API and files.",
            to: \.deviceGate.maxConnections),
        .int(
            "devices.max_connections_per_address", "0", in: 0...10_000_000,
            "Device connections open at once from one source address; 0: no cap (a simulated fleet connects from one address).",
            to: \.deviceGate.maxPerAddress),
    ]

    /// The silent-push policy (docs/throttling.md).
    static let policy: [ConfigKey] = [
        .int(
            "broadcast.channels_per_app", "10000", in: 1...1_000_000,
            "Live broadcast channels an app may have at once; one more is refused 400 CannotCreateChannelConfig (Apple: 10,000 per app and environment).",
            to: \.hub.channelsPerApp),
        .int(
            "broadcast.reconnect_grace_seconds", "60", in: 0...86_400,
            "A broadcast on a No-Message-Stored channel (or with apns-expiration 0) is still given to a subscriber it was broadcast to that connects again within this long of it: one whose connection or node was lost mid-fan-out (Apple gives no number). Never to a device that subscribes after it.",
            to: \.hub.broadcastGraceSeconds),
        .int(
            "broadcast.cursor_store_seconds", "5", in: 0...3600,
            "How often the broadcasts subscribers acknowledged are stored (and when a device's connection ends), instead of a row update per acknowledgement; after a node's death a device may be given the newest message again, which its activity ignores. 0: on every acknowledgement.",
            to: \.hub.broadcastCursorStoreSeconds),
        .int(
            "policy.budget.capacity", "3", in: 1...1000,
            "Silent wakes an app may get in a burst (token bucket per device and app; Apple: two or three per hour).",
            to: \.policy.budgetCapacity),
        .int(
            "policy.budget.refill_seconds", "1200", in: 1...(30 * 86400),
            "One silent wake is refilled per this many seconds.", to: \.policy.refillIntervalSeconds),
        .choice(
            "policy.budget.model", PolicySettings.BudgetModel.both,
            "Which budgets a silent wake must fit: per_app (the token bucket above: Apple's 'two or three per hour'), device_daily (one budget a day shared by every app on the device, reset every 24 hours: Apple DTS, forum thread 776933), or both (each source describes one; neither excludes the other).",
            to: \.policy.budgetModel),
        .int(
            "policy.budget.device_daily.capacity", "72", in: 1...100_000,
            "Background wakes a device's daily budget allows, shared by every app on it and by its other apps' traffic (Apple gives no number: 'up to several background push notifications per hour across all apps'; three an hour for a day).",
            to: \.policy.deviceDailyCapacity),
        .int(
            "policy.widgets.daily_budget", "70", in: 0...100_000,
            "Widget reloads a day widget pushes (apns-push-type: widgets) may trigger per device and app; past it the newest waits for the next 24-hour window (WidgetKit: 'typically 40 to 70 refreshes a day' for a frequently viewed widget; whether pushes count Apple does not say). 0: not budgeted.",
            to: \.policy.widgetDailyBudget),
        .int(
            "policy.controls.daily_budget", "0", in: 0...100_000,
            "The same for control pushes (apns-push-type: controls). Apple documents no budget for them: 0, none.",
            to: \.policy.controlDailyBudget),
        .int(
            "policy.inactive_app_days", "14", in: 0...3650,
            "An app the user has not launched for this many days gets no silent wakes until it is opened (Apple DTS: 'if the user has not launched the app for a while'; Apple gives no number). 0: off.",
            to: \.policy.inactiveAppDays),
        .int(
            "policy.herd_seconds", "300", in: 0...86_400,
            "After a device reboots its silent wakes wait this long (dasd's ThunderingHerdPolicy, about 300 s in device logs quoted in the field; Apple documents none). 0: off.",
            to: \.policy.herdSeconds),
        .int(
            "policy.live_activity.budget.capacity", "10", in: 1...100_000,
            "Priority-10 updates a Live Activity may get in a burst (token bucket per activity); over it an update waits for the device's next delivery window. Apple publishes no number.",
            to: \.policy.liveActivityCapacity),
        .int(
            "policy.live_activity.budget.refill_seconds", "360", in: 1...86400,
            "One priority-10 Live Activity update is refilled per this many seconds.",
            to: \.policy.liveActivityRefillSeconds),
        .int(
            "policy.live_activity.frequent_budget.capacity", "30", in: 1...100_000,
            "The same burst for an app with NSSupportsLiveActivitiesFrequentUpdates whose person has not turned them off (the device says so: frequent_pushes). Apple says only that it is higher.",
            to: \.policy.liveActivityFrequentCapacity),
        .int(
            "policy.live_activity.frequent_budget.refill_seconds", "60", in: 1...86400,
            "One priority-10 update of such an app is refilled per this many seconds.",
            to: \.policy.liveActivityFrequentRefillSeconds),
        .custom(
            "policy.held.storage", "newest_only", expected: "newest_only or up_to",
            "What an app keeps while over budget or unreachable: newest_only (as APNs: the newest silent push; one push for an offline device) or up_to (policy.held.limit).",
            parse: { ["newest_only": false, "up_to": true][$0] }, set: { $0.asRead.heldUpTo = $1 }),
        .int(
            "policy.held.limit", "100", in: 1...100,
            "With policy.held.storage up_to: pushes kept per app, the oldest discarded beyond it (at most 100).",
            to: \.asRead.heldLimit),
        .choice(
            "policy.piggyback.alert_scope", PolicySettings.PiggybackScope.allApps,
            "Held pushes an alerting delivery carries: all_apps on the device, or same_app only.",
            to: \.policy.alertPiggybackScope),
        .int(
            "policy.completion.deadline_seconds", "30", in: 1...3600,
            "Seconds an app has to call its completion handler after a background wake (iOS: 30).",
            to: \.policy.completionDeadlineSeconds),
        .int(
            "policy.completion.late_window_seconds", "600", in: 0...86400,
            "A completion this long after a missed deadline is still recorded as late.",
            to: \.policy.lateCompletionWindowSeconds),
        .int(
            "policy.storage.default_seconds", "2592000", in: 0...(365 * 86400),
            "How long a push without apns-expiration is kept (APNs: up to 30 days).", to: \.policy.defaultStorageSeconds
        ),
        .number(
            "policy.strikes.miss", "1", in: 0...100,
            "Strikes a missed completion deadline adds (the app was terminated).", to: \.policy.missStrike),
        .number(
            "policy.strikes.failed", "0.25", in: 0...100, "Strikes a 'failed' completion adds.",
            to: \.policy.failedStrike),
        .number(
            "policy.strikes.no_data_relief", "0.25", in: 0...100, "Strikes a timely 'noData' completion takes away.",
            to: \.policy.noDataRelief),
        .number(
            "policy.strikes.new_data_relief", "0.5", in: 0...100, "Strikes a timely 'newData' completion takes away.",
            to: \.policy.newDataRelief),
        .int(
            "policy.strikes.half_life_seconds", "21600", in: 0...(365 * 86400), "Strikes halve over this many seconds.",
            to: \.policy.strikeHalfLifeSeconds),
        .int(
            "policy.cooling.base_seconds", "1800", in: 0...(30 * 86400),
            "After a missed deadline the bucket is emptied and refills slowly for this long, doubled per strike beyond the first.",
            to: \.policy.coolingBaseSeconds),
        .int(
            "policy.cooling.max_seconds", "86400", in: 0...(365 * 86400), "The longest cooling period.",
            to: \.policy.coolingMaxSeconds),
        .number(
            "policy.cooling.slowdown", "4", in: 1...1000, "How many times slower the bucket refills while cooling.",
            to: \.policy.coolingSlowdown),
    ]

    /// The admin API.
    static let admin: [ConfigKey] = [
        .flag(
            "admin.enabled", "true",
            "Serve the admin API (lookups by apns-id and token, counters).", to: \.admin.enabled),
        adminHost,
        .int("admin.port", "2201", in: 0...65535, "Port of the admin API (HTTP/1.1, JSON).", to: \.admin.port),
        adminToken,
        .int(
            "admin.live.interval_ms", "1000", in: 100...60_000,
            "The live feed (/v1/live, the dashboard) writes one event this often.",
            to: \.adminLive.intervalMilliseconds),
        .int(
            "admin.live.stalled_close_seconds", "30", in: 0...86400,
            "A live-feed client that takes no event for this long is closed (meanwhile at most one event waits for it; the next are skipped); 0: never.",
            to: \.adminLive.stalledCloseSeconds),
    ]

    /// The store (docs/store.md).
    static let store: [ConfigKey] = [
        storeBackend,
        .text(
            "store.sqlite.path", "",
            "The SQLite database file (WAL mode). Empty: data_dir/pushgate.sqlite.", to: \.store.sqlitePath),
        .choice(
            "store.sqlite.synchronous", SQLiteStore.Synchronous.full,
            "full: a 200 is on disk (survives a power loss); normal: survives a crash of the process, not of the machine, and commits faster.",
            to: \.store.synchronous),
        postgresURL,
        .custom(
            "store.postgres.node_id", "", expected: "a name of at most 200 characters without spaces",
            "This node's name among the gateway nodes sharing the PostgreSQL database (each device's policy runs on its owner node; docs/store.md). Keep it stable across restarts. Empty: <hostname>:<devices.port>.",
            parse: { $0.utf8.count <= 200 && !$0.contains(where: \.isWhitespace) ? $0 : nil },
            set: { $0.store.nodeID = $1 }),
        .int(
            "store.postgres.lease_seconds", "10", in: 1...3600,
            "A node whose lease (renewed every third of this) is older than this is gone: another node takes its devices over and delivers their pushes.",
            to: \.store.cluster.leaseSeconds),
        .int(
            "store.postgres.start_seconds", "30", in: 1...3600,
            "How long a node waits at start for PostgreSQL (its first LISTEN and the snapshot) before it stops with an error naming store.postgres.url: an unreachable database is reported, not waited for in silence.",
            to: \.store.startSeconds),
        .custom(
            "store.postgres.route_address", "", expected: "http://host:port, https://host:port, off, or empty",
            "Where the other nodes hand this node the pushes they accept for its devices (it stores them): its provider API's URL as they reach it (the node links; docs/store.md). Empty: the h2c listener's address when it is bound to a specific address (else the TLS listener's); off: the others store those pushes and route them to this node through the database (a NOTIFY per push).",
            parse: { $0.isEmpty || $0 == "off" || NodeAddress(url: $0) != nil ? $0 : nil },
            set: { $0.store.routeAddress = $1 }),
        .int(
            "store.postgres.route_timeout_seconds", "5", in: 1...300,
            "How long a batch of pushes handed to another node over its link waits for that node's answer, its commit included (and a link for its connection), before the sender stores those pushes and routes them through the database instead.",
            to: \.store.links.timeoutSeconds),
        .custom(
            "store.postgres.route_trust_roots", "", expected: "a PEM file path, or empty",
            "PEM file of the certificate authorities that sign the other nodes' provider TLS certificates, for links to https route addresses. Empty: not verified (development certificates); the fleet's token still authenticates each link.",
            parse: { $0 }, set: { $0.store.links.trustRoots = $1.isEmpty ? [] : [$1] }),
        .int(
            "store.postgres.sweep_seconds", "30", in: 1...86400,
            "How often a node looks for pushes to its devices that no policy has decided and that are older than this (none in normal operation; each found is logged and counted).",
            to: \.store.cluster.sweepSeconds),
        .int(
            "store.retention_seconds", "86400", in: 0...(365 * 86400),
            "How long delivered and discarded notifications stay in the store (for lookups) before they are pruned.",
            to: \.store.retentionSeconds),
        .int(
            "store.prune_seconds", "60", in: 1...86400,
            "How often finished notifications past the retention are pruned and expired ones marked.",
            to: \.store.pruneSeconds),
        .int(
            "store.wait_limit_seconds", "10", in: 0...3600,
            "How long a POST (or a device's registration) waits for its commit to start while the store is stuck in an earlier one: past it the change is dropped unattempted and the POST answered 503 ServiceUnavailable (never delivered, nothing lands later); a commit already running ends in its own time (SQLite's busy timeout, 10 s; PostgreSQL's connection attempt). 0: no limit.",
            to: \.store.waitLimitSeconds),
        .int(
            "store.unanswered_wait_ms", "100", in: 0...60_000,
            "How long a change no request waits for (a device's acknowledgement, a decision about an earlier push, a budget) may wait for others before its commit, so that such changes share one instead of each making its own; a change a request waits for never waits, and takes them with it. A crash within the wait loses them as it loses any change not yet committed (a push acknowledged in it is delivered again after a restart). 0: each is committed at once.",
            to: \.store.unansweredWaitMilliseconds),
    ]

    // Keys the rules between keys name (`GatewayConfiguration.settle`).
    static let deviceTokenMinLength = ConfigKey.int(
        "provider.device_token.min_length", "64", in: 2...1024,
        "Shortest accepted device token, in hex characters.", to: \.asRead.deviceTokenMinLength)
    static let deviceTokenMaxLength = ConfigKey.int(
        "provider.device_token.max_length", "64", in: 2...1024,
        "Longest accepted device token, in hex characters (APNs tokens are 64).", to: \.asRead.deviceTokenMaxLength)
    static let tlsCertificate = ConfigKey.text(
        "provider.tls.certificate", "",
        "PEM certificate chain of the TLS listener. Empty: a development certificate is created in data_dir/tls on first start.",
        to: \.tls.certificate)
    static let tlsPrivateKey = ConfigKey.text(
        "provider.tls.private_key", "", "PEM private key of provider.tls.certificate.", to: \.tls.privateKey)
    static let maxWaiting = ConfigKey.int(
        "devices.max_waiting", "10000", in: 1...10_000_000,
        "Pushes that may wait for one device (queued or written, not acknowledged) before POSTs to its tokens get 429 TooManyRequests.",
        to: \.hub.maximumWaiting)
    static let deliveryWindow = ConfigKey.int(
        "devices.delivery_window", "64", in: 1...100_000,
        "Pushes written to a device and not yet acknowledged, at most; the rest wait their turn in its queue.",
        to: \.hub.deliveryWindow)
    static let adminToken = ConfigKey.optionalText(
        "admin.token", secret: .masked,
        "Bearer token the admin API requires (authorization: Bearer <token>); empty: none (loopback only).",
        to: \.adminToken)
    static let adminHost = ConfigKey.text(
        "admin.host", "127.0.0.1", nonEmpty: true,
        "Address the admin API binds to; anything but loopback requires admin.token.", to: \.admin.host)
    static let postgresURL = ConfigKey.text(
        "store.postgres.url", "", secret: .url(PostgresStore.redacted),
        "With store.backend postgres: postgres://user:password@host:port/database (plain TCP; loopback or a trusted network).",
        to: \.store.postgresURL)
    static let storeBackend = ConfigKey.choice(
        "store.backend", StoreSettings.Backend.sqlite,
        "Where accepted notifications, devices, tokens and budgets are kept: sqlite (a file in data_dir), postgres (store.postgres.url), or memory (nothing survives a restart; same as `serve --ephemeral`).",
        to: \.store.backend)

    public static let byName: [String: ConfigKey] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// A value as `pushgate config` shows it: secrets (the admin token, a PostgreSQL password) masked.
    public static func printable(_ name: String, _ value: String) -> String {
        byName[name]?.printable(value) ?? value
    }
}
