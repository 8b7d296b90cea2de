import AdminAPI
import Foundation
import Gateway
import Logging
import NIOCore
import NIOPosix
import ProviderAPI
import Testing

/// `/health` (alive) and `/ready` (listeners up, not draining) on the admin port of a real gateway.
@Suite(.timeLimit(.minutes(5))) struct HealthTests {
    @Test func readyUntilTheProviderAPIDrains() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        try await LocalGateway.run(
            topic: "com.example.app", settings: ["log.level=error"], group: group, logger: Logger(label: "test")
        ) { gateway in
            func get(_ path: String) async throws -> (Int, String) {
                try await AdminClient.get(host: "127.0.0.1", port: gateway.adminPort, path: path, token: nil)
            }
            #expect(try await get("/health").0 == 200)
            let (status, body) = try await get("/ready")
            #expect(status == 200)
            let ready = try JSONDecoder().decode(Readiness.self, from: Data(body.utf8))
            #expect(ready.status == "ready")
            #expect(
                ready.checks == [
                    "provider_listeners": true, "device_listeners": true, "not_draining": true, "store": true,
                ])
            // The answering process: this one (the gateway runs in the test's process).
            #expect(ready.pid == ProcessInfo.processInfo.processIdentifier)

            // Shutting the provider API down drains it: not ready any more, still alive.
            try await gateway.services.provider.shutdown()
            let (after, afterBody) = try await get("/ready")
            #expect(after == 503)
            #expect(afterBody.contains(#""not_draining" : false"#))
            #expect(try await get("/health").0 == 200)

        }
        try await group.shutdownGracefully()
    }
}
