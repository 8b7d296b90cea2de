import ProviderAuth
import PushModel

/// Who may manage an app's broadcast channels or broadcast on them (the channel-management API and
/// `POST /4/broadcasts/apps/<bundle>`): a provider token whose key includes the app, or a registered
/// client certificate that does ([ER]: `TopicMismatch` when it does not). The team on success.
enum ChannelAuthorization {
    static func authorize(
        bundleID: String, authorization: String?, identity: ConnectionIdentity,
        authentication: inout ConnectionAuthentication, context: ProviderContext, now: UnixTime
    ) -> Result<String?, BroadcastReason> {
        let environment = context.settings.environment
        switch identity {
        case .unknownCertificate: return .failure(.badCertificate)
        case .certificate(let grant):
            if let limited = grant.environment, limited != environment { return .failure(.badCertificateEnvironment) }
            return grant.topics.contains(bundleID) ? .success(grant.teamID) : .failure(.topicMismatch)
        case .token:
            switch authentication.authenticate(authorization: authorization, keys: context.keys, now: now) {
            case .failure(let rejection): return .failure(BroadcastReason(authentication: rejection.reason))
            case .success(let token):
                if let limited = token.key.environment, limited != environment {
                    return .failure(.invalidProviderToken)
                }
                return token.key.allows(bundleID: bundleID) ? .success(token.teamID) : .failure(.topicMismatch)
            }
        }
    }
}
