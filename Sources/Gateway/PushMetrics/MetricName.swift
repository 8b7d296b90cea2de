/// Every metric the gateway exports, named once, with its help text and labels. Prometheus conventions:
/// base units (seconds), `_total` on counters, and bounded label values only (a status, a reason, a push
/// type, an outcome — never a token or an apns-id).
public enum MetricName: String, CaseIterable, Sendable {
    // Provider API (recorded on the request path)
    case providerRequests = "pushgate_provider_requests_total"
    case providerRequestDuration = "pushgate_provider_request_duration_seconds"
    case accepted = "pushgate_accepted_total"
    case malformedRequests = "pushgate_provider_malformed_requests_total"
    case refusedStreams = "pushgate_provider_refused_streams_total"
    case stalledConnections = "pushgate_provider_stalled_connections_total"
    // Admin API
    case liveStalled = "pushgate_admin_live_stalled_total"
    case pushTypeMismatches = "pushgate_push_type_mismatches_total"
    // Policy (read from its counters when scraped)
    case silentOutcomes = "pushgate_silent_outcomes_total"
    case heldReasons = "pushgate_held_total"
    case completions = "pushgate_completions_total"
    case liveActivityUpdates = "pushgate_live_activity_updates_total"
    case deadlineMisses = "pushgate_completion_deadline_misses_total"
    case held = "pushgate_held_notifications"
    case deliveryStates = "pushgate_delivery_states_total"
    // Devices
    case connectedDevices = "pushgate_connected_devices"
    case registeredDevices = "pushgate_registered_devices"
    case keepAlives = "pushgate_keep_alives_total"
    case sent = "pushgate_sent_total"
    case resent = "pushgate_resent_total"
    case delivered = "pushgate_delivered_total"
    case acknowledged = "pushgate_acknowledged_total"
    case waiting = "pushgate_delivery_waiting_notifications"
    case disconnections = "pushgate_device_disconnections_total"
    case devicesClosed = "pushgate_devices_closed_for_misbehaviour_total"
    case enrolmentsRefused = "pushgate_device_enrolments_refused_total"
    case devicesRemoved = "pushgate_devices_removed_total"
    // Listeners' doors
    case connectionsOpen = "pushgate_connections_open"
    case connectionsRefused = "pushgate_connections_refused_total"
    case handshakeTimeouts = "pushgate_handshake_timeouts_total"
    // Store
    case storeCommits = "pushgate_store_commits_total"
    case storeCommitFailures = "pushgate_store_commit_failures_total"
    case storeCommitDuration = "pushgate_store_commit_duration_seconds"
    case storeCommitBatch = "pushgate_store_commit_batch_changes"
    // Several nodes
    case node = "pushgate_node_info"
    case routed = "pushgate_cluster_routed_total"
    case routedThroughStore = "pushgate_cluster_routes_through_store_total"
    case deviceHandovers = "pushgate_cluster_device_handovers_total"

    /// Its meaning, for `docs/metrics.md` and the HELP line.
    public var help: String {
        switch self {
        case .providerRequests: "Provider API requests answered, by status and Apple reason (empty for 200)."
        case .providerRequestDuration: "Time from a request's headers to its answer (after the store's commit)."
        case .accepted: "Notifications accepted (answered 200), by apns-push-type and class (alerting, silent, other)."
        case .malformedRequests:
            "Provider requests reset with PROTOCOL_ERROR as malformed (RFC 9113 §8.1.1: header-block rules, content-length)."
        case .pushTypeMismatches:
            "Notifications accepted although their apns-push-type does not match the payload (APNs may delay or drop them), by mismatch."
        case .refusedStreams:
            "Provider streams refused alone, the connection kept: over max_concurrent_streams (RST_STREAM REFUSED_STREAM) or max_header_list_size (431)."
        case .stalledConnections:
            "Provider connections whose unsent answers passed provider.http2.output_limit_bytes (a client that does not read): paused (the gateway stopped reading its requests) and closed (still stuck after provider.http2.stalled_close_seconds)."
        case .liveStalled:
            "Live-feed (/v1/live) events not written because the client had not taken the previous one (skipped), and feed connections closed for taking nothing for admin.live.stalled_close_seconds (closed)."
        case .silentOutcomes:
            "What the policy did with silent pushes and held ones: woken on budget, held, released (how), coalesced, expired, overflowed, not stored."
        case .heldReasons:
            "Pushes the policy held, by reason (the decision log's rule: held_over_budget, held_device_budget, held_thundering_herd, held_app_inactive, held_offline, …)."
        case .completions:
            "Background wakes completed by the app, by result (new_data, no_data, failed, late), and wakes the device did not run (not_woken)."
        case .liveActivityUpdates:
            "Live Activity updates by outcome: on_budget (priority 10, delivered at once), over_budget (priority 10 past its activity's budget, held for the next window), opportunistic (priority 5, held for the next window)."
        case .deadlineMisses: "Background wakes not completed within the 30-second deadline (each penalises the app)."
        case .held: "Notifications held by the policy now."
        case .deliveryStates:
            "Notifications that entered each of Apple's delivery states (Push Notifications Console names), where the device's policy runs."
        case .connectedDevices: "Device agents connected to this node now."
        case .registeredDevices: "Devices known to this node's registry."
        case .keepAlives: "Keep-alives answered."
        case .sent:
            "Notifications written to device connections (a push written again after its connection ended counts again)."
        case .resent:
            "Notifications written again because the connection they were written to ended before the device acknowledged them."
        case .delivered: "Notifications delivered: acknowledged by their device (Apple's 'Delivered to Device')."
        case .acknowledged: "Acknowledgements received from devices (a repeated one delivers nothing)."
        case .waiting:
            "Notifications decided for delivery and not yet acknowledged (written or waiting in a device's queue)."
        case .disconnections:
            "Device sessions that ended (closed by either side, dropped, replaced, stalled, shut down)."
        case .devicesClosed: "Device connections closed for flooding, oversized frames or not reading."
        case .enrolmentsRefused:
            "Device registrations refused: a missing or wrong enrolment secret, or over devices.enrolments_per_minute_per_address."
        case .devicesRemoved:
            "Devices removed, by how: removed (pushgate devices remove) or pruned (not seen for devices.prune_after_days)."
        case .connectionsOpen: "Connections open now, by listener kind (provider, devices)."
        case .connectionsRefused:
            "Connections closed at accept, by listener kind and cap (listener_cap: the kind's maximum; address_cap: one source address's)."
        case .handshakeTimeouts:
            "Connections closed for not finishing their TLS handshake, HTTP/2 preface or WebSocket upgrade in time."
        case .storeCommits: "Store transactions committed (each carries a group of changes)."
        case .storeCommitFailures: "Store transactions that failed (their requests were answered 500)."
        case .storeCommitDuration:
            "Time one store commit took, until durable (on SQLite with `synchronous: full`, until the sync of the log that covered it)."
        case .storeCommitBatch: "Changes per store commit."
        case .node:
            "This node's name (store.postgres.node_id, or <hostname>:<devices.port>), as a label; the value is 1."
        case .routed: "Notifications routed between nodes: out (accepted here, run by the device's owner), in."
        case .routedThroughStore:
            "Notifications handed to their device's owner through the database (a route notice) because the node link did not take them: no link to that node, the link failed, or no answer in time."
        case .deviceHandovers: "Devices this node claimed from another node (claimed) or let go to one (released)."
        }
    }
}
