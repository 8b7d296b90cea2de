import ArgumentParser
import ContentOrigin
import Foundation
import NIOCore
import NIOPosix
import PushModel
import WallClock

/// `pushgate origin`: the content server simulated apps fetch from.
struct OriginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "origin",
        abstract: "Serve versioned content (a manifest and one item per version) for simulated apps to fetch.",
        discussion: """
            GET /manifest names the newest version; GET /items/<n> is its item (Range: bytes=<from>- resumes \
            it); POST /publish publishes a version now; GET /log lists what each device (x-device-id) \
            fetched. docs/device-runtime.md describes how simulated apps use it.
            """)

    @Option(help: "Address to bind.") var host = "127.0.0.1"
    @Option(help: "Port to bind; 0 picks a free one.") var port = 2202
    @Option(help: "Size of each version's item, in bytes.") var itemBytes = 200_000
    @Option(help: "Publish a new version every this many seconds; 0: only on POST /publish.") var publishEvery = 0
    @Option(help: "Bytes per second each response is sent at (background sessions get less); 0: unpaced.")
    var linkBytesPerSecond = 0

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port: expected 0 to 65535, got \(port)") }
        guard itemBytes >= 1 else { throw ValidationError("--item-bytes: expected at least 1, got \(itemBytes)") }
        guard publishEvery >= 0 else { throw ValidationError("--publish-every: must not be negative") }
        guard linkBytesPerSecond >= 0 else { throw ValidationError("--link-bytes-per-second: must not be negative") }
    }

    func run() async throws {
        var settings = OriginServer.Settings()
        settings.host = host
        settings.port = port
        settings.itemBytes = itemBytes
        settings.linkBytesPerSecond = linkBytesPerSecond
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let origin = OriginServer(settings: settings, group: group, clock: UnixTime.now) { version in
            print("published version \(version.version) (\(version.bytes) bytes)")
        }
        try await origin.start()
        print("origin: http://\(host):\(origin.boundPort ?? port)/manifest")
        origin.publish()
        // Publishes on its schedule until Ctrl-C (or SIGTERM).
        await withTaskGroup(of: Void.self) { schedule in
            if publishEvery > 0 {
                schedule.addTask {
                    while (try? await Task.sleep(for: .seconds(publishEvery))) != nil {  // clock-ok: schedule
                        origin.publish()
                    }
                }
            }
            await interrupted()
            schedule.cancelAll()
        }
        await origin.stop()
        let log = origin.log.all
        print("served \(log.count) requests to \(Set(log.map(\.device).filter { !$0.isEmpty }).count) devices")
        try await group.shutdownGracefully()
    }
}
