import PostgresNIO
import PushModel

/// The schema's migrations on PostgreSQL, and the names the statements share.
extension PostgresStore {
    static let migrations: [[String]] = [
        [
            "CREATE TABLE devices (id TEXT PRIMARY KEY, secret_hash BYTEA NOT NULL, created_at BIGINT NOT NULL, seq BIGSERIAL)",
            """
            CREATE TABLE tokens (token TEXT PRIMARY KEY, device_id TEXT NOT NULL, bundle_id TEXT NOT NULL,
                unregistered_at BIGINT, seq BIGSERIAL)
            """,
            """
            CREATE TABLE notifications (
                seq BIGSERIAL PRIMARY KEY, team_id TEXT NOT NULL, apns_id TEXT NOT NULL,
                device_token TEXT NOT NULL, topic TEXT NOT NULL, bundle_id TEXT NOT NULL, push_type TEXT NOT NULL,
                priority BIGINT NOT NULL, expiration BIGINT, collapse_id TEXT, class TEXT NOT NULL,
                payload BYTEA NOT NULL, received_at BIGINT NOT NULL, expires_at BIGINT, device_id TEXT,
                state BIGINT NOT NULL, rule TEXT, finished_at BIGINT)
            """,
            "CREATE UNIQUE INDEX notifications_id ON notifications (apns_id, team_id)",
            "CREATE INDEX notifications_pending ON notifications (seq) WHERE state = 0",
            "CREATE INDEX notifications_finished ON notifications (finished_at) WHERE state <> 0",
            """
            CREATE TABLE app_budgets (
                device_id TEXT NOT NULL, bundle_id TEXT NOT NULL, tokens DOUBLE PRECISION,
                strikes DOUBLE PRECISION NOT NULL, settled_at BIGINT NOT NULL, cooling_until BIGINT NOT NULL,
                app_state TEXT NOT NULL, PRIMARY KEY (device_id, bundle_id))
            """,
        ],
        [
            "ALTER TABLE devices ADD COLUMN owner TEXT",
            "ALTER TABLE devices ADD COLUMN claims BIGINT NOT NULL DEFAULT 0",
            "CREATE INDEX notifications_device_pending ON notifications (device_id, seq) WHERE state = 0",
        ],
        [
            // Each node's lease, renewed on a timer with the database's clock: a node whose lease is stale
            // is gone, and a survivor takes its devices over.
            "CREATE TABLE nodes (node_id TEXT PRIMARY KEY, renewed_at BIGINT NOT NULL)"
        ],
        [
            // When each device last connected (pruning) and when it was removed.
            "ALTER TABLE devices ADD COLUMN last_seen_at BIGINT",
            "ALTER TABLE devices ADD COLUMN removed_at BIGINT",
        ],
        [
            // Takeovers find the devices of a node that is gone, and whether any device's owner is gone,
            // without reading every device (each node asks on every renewal of its lease).
            "CREATE INDEX devices_owner ON devices (owner)"
        ],
        [
            // Live Activity tokens beside the apps' own (docs/live-activities.md).
            "ALTER TABLE tokens ADD COLUMN activity TEXT"
        ],
        [
            // Broadcast channels (docs/live-activities.md).
            """
            CREATE TABLE channels (id TEXT PRIMARY KEY, bundle_id TEXT NOT NULL, storage_policy BIGINT NOT NULL,
                created_at BIGINT NOT NULL, deleted_at BIGINT, seq BIGSERIAL)
            """
        ],
        [
            // Broadcasts (one row each) and the channel subscriptions with their cursors.
            """
            CREATE TABLE broadcasts (channel_id TEXT NOT NULL, sequence BIGINT NOT NULL, apns_id TEXT NOT NULL,
                team_id TEXT NOT NULL, bundle_id TEXT NOT NULL, priority BIGINT NOT NULL, expiration BIGINT,
                payload BYTEA NOT NULL, accepted_at BIGINT NOT NULL, deliverable_until BIGINT NOT NULL,
                PRIMARY KEY (channel_id, sequence))
            """,
            """
            CREATE TABLE subscriptions (device_id TEXT NOT NULL, channel_id TEXT NOT NULL, bundle_id TEXT NOT NULL,
                acknowledged BIGINT NOT NULL, PRIMARY KEY (device_id, channel_id))
            """,
        ],
        // Version 9 stores apns-ids and tokens as bytes on SQLite; nothing changes here.
        [],
        // Version 10 makes SQLite's index on finished_at partial; PostgreSQL keeps its own.
        [],
        [
            // Where each node takes routed pushes (its provider API), for the node links.
            "ALTER TABLE nodes ADD COLUMN address TEXT",
            // The fleet's own secret, made by the first node that needs it: the node links' tokens.
            "CREATE TABLE fleet (id BIGINT PRIMARY KEY CHECK (id = 1), secret TEXT NOT NULL)",
        ],
        [
            // Room on each device page for a row's next version: a device's hello (`last_seen_at`, in no
            // index) is then updated in place (HOT) instead of adding an entry to the id and owner indexes.
            // Those entries, dead once the next hello came, were what every lease renewal's walk of the
            // owner index stepped over (a heap fetch each: 19 ms a walk on 100,000 devices updated twice,
            // 0.16 ms with the room). Pages written from now on get it.
            "ALTER TABLE devices SET (fillfactor = 70)"
        ],
        [
            // The same room for budgets: a silent push updates its app's row twice (the wake, the
            // completion), and on a full page each update is a new version elsewhere with a new key entry.
            // 400,000 upserts of 100,000 rows, 250 a commit: 14 % in place and 4.65 s without the room,
            // 72 % and 3.12 s with it.
            "ALTER TABLE app_budgets SET (fillfactor = 70)"
        ],
        [
            // The sweep's and a takeover's index: pushes pending with no decision, which normal operation
            // does not leave (a push is stored with its decision). The sweep walked the pending index
            // instead, whose entries include every push's first version until a vacuum: each node's sweep,
            // every 30 s, fetched (and pruned) the rows of every push since. `fleet.sh 100000 7 10`: 26-33
            // sweeps a run took 5.4-8.2 s of the server's time (up to 1.3 s one, in whichever wave it fell);
            // 2.6 ms in all with this index.
            "CREATE INDEX notifications_undecided ON notifications (seq) WHERE state = 0 AND rule IS NULL"
        ],
    ]

    /// The database's clock in milliseconds: leases are compared on one clock, whatever the nodes' say.
    static let databaseNow = "(extract(epoch from clock_timestamp()) * 1000)::bigint"

    /// The channel every node listens on.
    static let channel = "pushgate"
    /// Devices whose state other nodes load at start (this node loads the rest: its own, and those no
    /// node has claimed).
    var ownedElsewhere: String { "(SELECT id FROM devices WHERE owner <> $1)" }

    func migrate() async throws {
        try await client.withTransaction(logger: logger) { connection in
            // Nodes starting together migrate one at a time.
            try await connection.query("SELECT pg_advisory_xact_lock(7418)", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)", logger: logger)
            var current = 0
            for try await version in try await connection.query(
                "SELECT COALESCE(MAX(version), 0) FROM schema_version", logger: logger
            ).decode(Int64.self) {
                current = Int(version)
            }
            guard current <= Schema.latestVersion else {
                throw StoreError.newerSchema(current, where: "at \(place)")
            }
            for version in (current + 1)..<(Schema.latestVersion + 1) {
                for statement in Self.migrations[version - 1] {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                let number = Int64(version)
                try await connection.query("INSERT INTO schema_version (version) VALUES (\(number))", logger: logger)
            }
        }
    }
}
