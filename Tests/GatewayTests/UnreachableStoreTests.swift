import Gateway
import Logging
import NIOCore
import NIOPosix
import Testing

/// A node whose PostgreSQL does not answer stops at start with an error naming `store.postgres.url`
/// (the connection pool alone would retry for ever, in silence).
@Suite struct UnreachableStoreTests {
    @Test func anUnreachableDatabaseIsReportedAtStart() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // Port 1 on loopback: nothing listens there.
        await #expect {
            try await LocalGateway.run(
                topics: ["com.example.app"],
                settings: [
                    "store.backend=postgres", "store.postgres.url=postgres://pushgate:secret@127.0.0.1:1/none",
                    "store.postgres.start_seconds=1",
                ], group: group, logger: Logger(label: "test")
            ) { _ in }
        } throws: { error in
            guard let error = error as? ConfigError else { return false }
            return error.key == "store.postgres.url" && error.message.contains("did not answer within 1 s")
                && !error.message.contains("secret")
        }
        try await group.shutdownGracefully()
    }
}
