import Foundation

extension AdminClient {
    /// A gateway's `/v1/counters`, decoded as the server encodes it; nil when it does not answer with them.
    public static func counters(host: String = "127.0.0.1", port: Int, token: String? = nil) async -> Counters? {
        guard let answer = try? await get(host: host, port: port, path: "/v1/counters", token: token),
            answer.status == 200
        else { return nil }
        return try? JSONDecoder().decode(Counters.self, from: Data(answer.body.utf8))
    }

    /// Whether a gateway answers `/ready` with 200 (false when it does not answer at all); with `pid`, only
    /// when that process is the one answering. `token`: the admin API's (`admin.token`), when it has one.
    public static func isReady(host: String = "127.0.0.1", port: Int, pid: Int32? = nil, token: String? = nil) async
        -> Bool
    {
        guard let answer = try? await get(host: host, port: port, path: "/ready", token: token), answer.status == 200
        else { return false }
        guard let pid else { return true }
        return (try? JSONDecoder().decode(Readiness.self, from: Data(answer.body.utf8)))?.pid == pid
    }
}
