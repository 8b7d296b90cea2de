/// The eleven values of `apns-push-type`, with what each implies for the topic, priority and payload.
public enum PushType: String, CaseIterable, Sendable, Codable {
    case alert
    case background
    case voip
    case complication
    case fileprovider
    case mdm
    case location
    case liveactivity
    case pushtotalk
    case widgets
    case controls

    /// The suffix APNs expects after the bundle id in `apns-topic`; `nil` where the topic is the bundle id itself.
    public var topicSuffix: String? {
        switch self {
        case .alert, .background, .mdm: return nil
        case .voip: return ".voip"
        case .complication: return ".complication"
        case .fileprovider: return ".pushkit.fileprovider"
        case .location: return ".location-query"
        case .liveactivity: return ".push-type.liveactivity"
        case .pushtotalk: return ".voip-ptt"
        case .widgets: return ".push-type.widgets"
        case .controls: return ".push-type.controls"
        }
    }

    /// The priorities APNs accepts for this push type.
    public func allows(_ priority: Priority) -> Bool {
        switch self {
        case .background: return priority != .immediate
        case .location: return priority != .low
        case .pushtotalk: return priority == .immediate
        default: return true
        }
    }

    /// Push types APNs accepts only over token-based (JWT) connections.
    public var requiresTokenAuthentication: Bool {
        self == .location || self == .liveactivity
    }

    /// Largest payload in bytes: 5120 for VoIP, 4096 otherwise.
    public var maximumPayloadSize: Int { self == .voip ? 5120 : 4096 }

    /// The largest payload any push type allows; the edge stops reading past this.
    public static let largestPayloadSize = 5120

    /// Infers the push type as APNs does when `apns-push-type` is absent: from the topic's suffix,
    /// else from the payload (`content-available` alone means background).
    public static func infer(topic: Topic, payload: PayloadSummary) -> PushType {
        // Longest suffix first: ".voip-ptt" must not be taken for ".voip".
        for type in suffixedByLength where topic.value.hasSuffix(type.topicSuffix!) {
            return type
        }
        return payload.isSilent ? .background : .alert
    }

    private static let suffixedByLength: [PushType] =
        allCases
        .filter { $0.topicSuffix != nil }
        .sorted { $0.topicSuffix!.utf8.count > $1.topicSuffix!.utf8.count }
}
