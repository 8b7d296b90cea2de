import ArgumentParser
import Gateway
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the gateway: the provider API over TLS and h2c.")

    @OptionGroup var options: ConfigOptions

    @Flag(help: "Keep everything in memory (store.backend=memory): nothing survives a restart.")
    var ephemeral = false

    func run() async throws {
        var options = self.options
        if ephemeral { options.overrides.append("store.backend=memory") }
        let configuration = try failing { try options.load() }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = configuration.logLevel(forLabel: label)
            return handler
        }
        // The provider API's: the group's own messages are about its listeners draining.
        let logger = Logger(label: "pushgate.provider")
        // One set of threads runs the whole gateway: its sockets, its store's PostgreSQL connections (NIO's
        // singleton group, postgres-nio's default) and its tasks (Swift's global executor handed to that
        // group). A commit's statements then resume the writer on the thread that read their answer; with a
        // group of its own for the sockets and the global executor's threads for the tasks, every statement
        // crossed three threads, and a silent push cost about a fifth more of the node's CPU
        // (Benchmarks/HISTORY.md, "one set of threads").
        let threads = configuration.eventLoops == 0 ? System.coreCount : configuration.eventLoops
        NIOSingletons.groupLoopCountSuggestion = threads
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        let group = MultiThreadedEventLoopGroup.singleton
        try await asyncFailing {
            try await GatewayServices.withServices(configuration: configuration, group: group, logger: logger) {
                try await $0.serviceGroup(stoppedBySignals: true, logger: logger).run()
            }
        }
    }
}
