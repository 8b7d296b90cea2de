/// A push whose `apns-push-type` does not match its payload. Apple answers InvalidPushType only for a
/// header value that is no push type; for a mismatch it says APNs "may delay the delivery of the
/// notification, or drop it altogether" — so it is accepted, classified by its push type, and recorded
/// (the decision log, `pushgate_push_type_mismatches_total`) for the backend team to see.
public enum PushTypeMismatch: String, Sendable, CaseIterable, Codable {
    /// `background` with an alert, sound or badge: delivered as a background push (throttled, nothing shown).
    case backgroundWithVisibleContent = "background_with_visible_content"
    /// `background` without `content-available: 1`: iOS has nothing to wake the app for.
    case backgroundWithoutContentAvailable = "background_without_content_available"
    /// `alert` with no alert, sound or badge: nothing for the user to see.
    case alertWithoutVisibleContent = "alert_without_visible_content"
    /// `alert` or `background` with no `aps` object at all.
    case noAPS = "no_aps"
    /// `widgets` or `controls` without `aps.content-changed: true`: the system has nothing to reload for.
    case withoutContentChanged = "without_content_changed"

    /// The mismatch, if any, of a payload under a push type. Other push types carry what their
    /// frameworks read (VoIP, MDM and location payloads need no `aps`).
    public static func of(_ type: PushType, _ payload: PayloadSummary) -> PushTypeMismatch? {
        switch type {
        case .alert:
            if !payload.hasAPS { return .noAPS }
            return payload.isAlerting ? nil : .alertWithoutVisibleContent
        case .background:
            if !payload.hasAPS { return .noAPS }
            if payload.isAlerting { return .backgroundWithVisibleContent }
            return payload.contentAvailable ? nil : .backgroundWithoutContentAvailable
        case .widgets, .controls:
            return payload.contentChanged ? nil : .withoutContentChanged
        default:
            return nil
        }
    }

    public var description: String {
        switch self {
        case .backgroundWithVisibleContent: "background push with an alert, sound or badge"
        case .backgroundWithoutContentAvailable: "background push without content-available: 1"
        case .alertWithoutVisibleContent: "alert push with no alert, sound or badge"
        case .noAPS: "no aps dictionary"
        case .withoutContentChanged: "widgets or controls push without content-changed: true"
        }
    }
}
