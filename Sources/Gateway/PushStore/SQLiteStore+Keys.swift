import EmbeddedSQLite
import PushModel

/// How the SQLite store holds a notification's apns-id and device token (schema version 9): as their
/// bytes, not their hex digits — an apns-id's 16 (36 as text), a token's 32 (64) — in the row and in the
/// `(apns_id, team_id)` index, a fifth of what is written for each notification. An apns-id sent with
/// upper-case digits keeps its text as sent (SQLite types values, not columns), so it is answered and
/// looked up exactly as before. With `sqlite3`: `SELECT hex(apns_id), hex(device_token) FROM notifications`.
extension SQLiteStore {
    /// The apns-id as its column holds it, to bind in a WHERE.
    static func key(_ id: APNsID) -> any SQLiteBindable {
        guard !id.hasUpperCaseDigits else { return id.value }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        id.appendBytes(to: &bytes)
        return bytes
    }

    /// The apns-id as parameter `index` of a row.
    static func bind(_ id: APNsID, to row: inout SQLiteRowBinder, at index: Int32) {
        if id.hasUpperCaseDigits {
            row.text(index) { id.appendText(to: &$0) }
        } else {
            row.blob(index) { id.appendBytes(to: &$0) }
        }
    }

    /// The apns-id column read back as text: the UUID of its 16 bytes, or the text it holds. (Anything
    /// else, from a database edited by hand, comes back as hex and is refused by `NotificationColumns`,
    /// naming the column.)
    static func idText(_ column: SQLiteTextOrBytes) -> String {
        switch column {
        case .text(let text): text
        case .bytes(let bytes): APNsID(bytes: bytes)?.value ?? Hex.encode(bytes)
        }
    }

    /// The device-token column read back as hex.
    static func tokenText(_ column: SQLiteTextOrBytes) -> String {
        switch column {
        case .text(let text): text
        case .bytes(let bytes): Hex.encode(bytes)
        }
    }

    /// Version 9: the notifications table rebuilt with its apns-ids and tokens as bytes (the same
    /// columns in the same order; an id with upper-case digits, or any value that is not hex, kept as it
    /// was), and its indexes made again.
    static let keysAsBytes: [String] =
        [
            notificationsTable("notifications_v9"),
            """
            INSERT INTO notifications_v9 SELECT seq, team_id,
                CASE WHEN apns_id NOT GLOB '*[A-F]*' AND length(unhex(apns_id, '-')) = 16
                    THEN unhex(apns_id, '-') ELSE apns_id END,
                COALESCE(unhex(device_token), device_token), topic, bundle_id, push_type, priority, expiration,
                collapse_id, class, payload, received_at, expires_at, device_id, state, rule, finished_at
            FROM notifications ORDER BY seq
            """,
            "DROP TABLE notifications",
            "ALTER TABLE notifications_v9 RENAME TO notifications",
        ] + notificationsIndexes

    /// The notifications table since version 9 (version 1 made it with its apns-ids and tokens as text).
    static func notificationsTable(_ name: String) -> String {
        """
        CREATE TABLE \(name) (
            seq INTEGER PRIMARY KEY, team_id TEXT NOT NULL, apns_id BLOB NOT NULL,
            device_token BLOB NOT NULL, topic TEXT NOT NULL, bundle_id TEXT NOT NULL, push_type TEXT NOT NULL,
            priority INTEGER NOT NULL, expiration INTEGER, collapse_id TEXT, class TEXT NOT NULL,
            payload BLOB NOT NULL, received_at INTEGER NOT NULL, expires_at INTEGER, device_id TEXT,
            state INTEGER NOT NULL, rule TEXT, finished_at INTEGER)
        """
    }

    /// The notifications table's indexes (versions 1 and 9; version 10 made `notifications_finished`
    /// partial: `finishedIndex`).
    static let notificationsIndexes = [
        // apns-id first: the same index answers outcomes and lookups by id, and keeps (team, id) unique.
        "CREATE UNIQUE INDEX notifications_id ON notifications (apns_id, team_id)",
        "CREATE INDEX notifications_pending ON notifications (seq) WHERE state = 0",
        "CREATE INDEX notifications_finished ON notifications (finished_at) WHERE state <> 0",
    ]

    /// Version 10: `finished_at` indexed only for notifications that finished after they were received
    /// (delivered, expired, coalesced later). Those finished at receipt — each push to a token without a
    /// device, or not stored — cost an insert into the index and are never updated again: pruning finds
    /// them by walking the table in `seq` order instead (`SQLiteStore.prune`).
    static let finishedIndex = [
        "DROP INDEX IF EXISTS notifications_finished",
        """
        CREATE INDEX notifications_finished ON notifications (finished_at)
            WHERE state <> 0 AND finished_at <> received_at
        """,
    ]
}
