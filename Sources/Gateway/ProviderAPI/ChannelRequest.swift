import Foundation
import NIOCore
import ProviderAuth
import PushIntake
import PushModel

/// One request of the channel-management API (Apple's "Sending channel management requests to APNs";
/// docs/live-activities.md), decided apart from HTTP/2: the path and method, the credential and the
/// app it may manage, then the channel change, answered once it is stored.
struct ChannelRequest {
    var method: String
    var path: String
    var authorization: String?
    var requestID: String?
    var channelID: String?
    var body: [UInt8]

    /// What to answer: the status, the headers besides `:status`, and a JSON body (empty: none).
    struct Answer: Equatable {
        var status: Int
        var headers: [(String, String)] = []
        var body: [UInt8] = []

        static func == (lhs: Answer, rhs: Answer) -> Bool {
            lhs.status == rhs.status && lhs.body == rhs.body
                && lhs.headers.map { "\($0.0): \($0.1)" } == rhs.headers.map { "\($0.0): \($0.1)" }
        }

        static func refused(_ reason: BroadcastReason) -> Answer {
            Answer(
                status: reason.status, headers: [("content-type", "application/json")],
                body: Array(#"{"reason":"\#(reason.rawValue)"}"#.utf8))
        }
    }

    /// Larger bodies are refused (a creation's is a few dozen bytes).
    static let maximumBody = 4096

    enum Route {
        case channels(bundleID: String)
        case allChannels(bundleID: String)
    }

    /// `/1/apps/<bundle id>/channels` or `/1/apps/<bundle id>/all-channels`.
    static func route(_ path: String) -> Route? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "1", parts[2] == "apps", Topic(String(parts[3])) != nil
        else { return nil }
        let bundleID = String(parts[3])
        switch parts[4] {
        case "channels": return .channels(bundleID: bundleID)
        case "all-channels": return .allChannels(bundleID: bundleID)
        default: return nil
        }
    }

    /// Decides the request; the answer's future completes on `eventLoop`. Every answer carries
    /// `apns-request-id` (the request's, or a new one).
    func answer(
        identity: ConnectionIdentity, authentication: inout ConnectionAuthentication, context: ProviderContext,
        directory: any ChannelDirectory, now: UnixTime, eventLoop: any EventLoop, requestIDs: inout FastRandom
    ) -> EventLoopFuture<Answer> {
        let requestID = self.requestID ?? APNsID.generate(using: &requestIDs).value
        // Called from the store's commit callbacks too: it captures only sendable values.
        let done: @Sendable (Answer) -> EventLoopFuture<Answer> = { [eventLoop, requestID] answer in
            eventLoop.makeSucceededFuture(Self.withID(answer, requestID))
        }
        guard body.count <= Self.maximumBody else { return done(.refused(.payloadTooLarge)) }
        guard let route = Self.route(path) else { return done(.refused(.badPath)) }
        let bundleID: String
        switch route {
        case .channels(let bundle), .allChannels(let bundle): bundleID = bundle
        }
        let allowed: Set<String>
        switch route {
        case .channels: allowed = ["POST", "GET", "DELETE"]
        case .allChannels: allowed = ["GET"]
        }
        guard allowed.contains(method) else { return done(.refused(.methodNotAllowed)) }
        if case .failure(let refusal) = ChannelAuthorization.authorize(
            bundleID: bundleID, authorization: authorization, identity: identity, authentication: &authentication,
            context: context, now: now)
        {
            return done(.refused(refusal))
        }

        switch (route, method) {
        case (.allChannels, _):
            let ids = directory.channels(of: bundleID).map(\.id.value)
            return done(
                Answer(status: 200, headers: [("content-type", "application/json")], body: Self.json(["channels": ids]))
            )
        case (.channels, "POST"):
            let policy: MessageStoragePolicy
            switch Self.creation(body) {
            case .success(let value): policy = value
            case .failure(let reason): return done(.refused(reason))
            }
            switch directory.create(bundleID: bundleID, policy: policy, now: now, answeringOn: eventLoop) {
            case .failure(.limitReached): return done(.refused(.cannotCreateChannelConfig))
            case .success(let (channel, stored)):
                return stored.flatMap { done(Answer(status: 201, headers: [("apns-channel-id", channel.id.value)])) }
                    .flatMapErrorThrowing { _ in Self.withID(.refused(.internalServerError), requestID) }
            }
        default:
            guard let text = channelID else { return done(.refused(.missingChannelId)) }
            guard let id = ChannelID(text) else { return done(.refused(.badChannelId)) }
            if method == "GET" {
                guard let channel = directory.channel(id, bundleID: bundleID) else {
                    return done(.refused(.channelNotRegistered))
                }
                return done(
                    Answer(
                        status: 200, headers: [("content-type", "application/json")],
                        body: Self.json([
                            "message-storage-policy": channel.storagePolicy.rawValue, "push-type": "LiveActivity",
                        ])))
            }
            guard let stored = directory.delete(id, bundleID: bundleID, now: now, answeringOn: eventLoop) else {
                return done(.refused(.channelNotRegistered))
            }
            return stored.flatMap { done(Answer(status: 204)) }
                .flatMapErrorThrowing { _ in Self.withID(.refused(.internalServerError), requestID) }
        }
    }

    private static func withID(_ answer: Answer, _ requestID: String) -> Answer {
        var answer = answer
        answer.headers.insert(("apns-request-id", requestID), at: 0)
        return answer
    }

    /// A creation's body: `{"message-storage-policy": 0 or 1, "push-type": "LiveActivity"}`.
    static func creation(_ body: [UInt8]) -> Result<MessageStoragePolicy, BroadcastReason> {
        guard !body.isEmpty,
            let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        else { return .failure(.badRequestPayload) }
        let known: Set<String> = ["message-storage-policy", "push-type"]
        guard object.keys.allSatisfy(known.contains) else { return .failure(.badRequestParams) }
        guard object["push-type"] != nil else { return .failure(.missingPushType) }
        // Typed by the decoder: a number that is a boolean, or a string, is no policy.
        guard let fields = try? JSONDecoder().decode(CreationFields.self, from: Data(body)) else {
            return .failure(.badRequestParams)
        }
        guard fields.pushType == "LiveActivity" else { return .failure(.invalidPushType) }
        guard let raw = fields.policy, let policy = MessageStoragePolicy(rawValue: raw) else {
            return .failure(.badRequestParams)
        }
        return .success(policy)
    }

    private struct CreationFields: Decodable {
        var policy: Int?
        var pushType: String?

        enum CodingKeys: String, CodingKey {
            case policy = "message-storage-policy"
            case pushType = "push-type"
        }

        init(from decoder: any Decoder) throws {
            let values = try decoder.container(keyedBy: CodingKeys.self)
            policy = try values.decodeIfPresent(Int.self, forKey: .policy)
            // A push type that is not a string is an invalid one, not an unreadable body.
            pushType = (try? values.decodeIfPresent(String.self, forKey: .pushType)) ?? nil
        }
    }

    private static func json(_ object: [String: Any]) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
    }
}
