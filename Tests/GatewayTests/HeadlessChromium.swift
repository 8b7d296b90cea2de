import ChildProcess
import Foundation
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's `chromium`, headless, driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
/// JSON messages separated by NUL on file descriptors 3 and 4), with one page open. For the dashboard
/// test: load a page, read values from it as it updates, take a screenshot.
final class HeadlessChromium: @unchecked Sendable {
    static let binary: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    private let process: ChildProcess
    private let toBrowser: Int32
    private let fromBrowser: Int32
    private let profile: String
    private var nextID = 0
    private var session: String?
    private var pending: [UInt8] = []
    private let queue = DispatchQueue(label: "chromium")

    init(width: Int = 1280, height: Int = 900) throws {
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("pushgate-chromium-\(UUID())").path
        var input: [Int32] = [0, 0]
        var output: [Int32] = [0, 0]
        guard pipe(&input) == 0, pipe(&output) == 0 else { throw Failure("pipe failed") }
        let arguments = [
            "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--user-data-dir=\(profile)", "--window-size=\(width),\(height)", "about:blank",
        ]
        defer {
            Glibc.close(input[0])
            Glibc.close(output[1])
        }
        process = try ChildProcess(HeadlessChromium.binary!, arguments, descriptors: [3: input[0], 4: output[1]])
        toBrowser = input[1]
        fromBrowser = output[0]
    }

    /// Opens `url` in a new page and attaches to it.
    func open(_ url: String) async throws {
        let target = try await call("Target.createTarget", ["url": url])
        guard let id = target["targetId"] as? String else { throw Failure("no target: \(target)") }
        let attached = try await call("Target.attachToTarget", ["targetId": id, "flatten": true])
        session = attached["sessionId"] as? String
    }

    /// The value of a JavaScript expression in the page.
    func evaluate(_ expression: String) async throws -> Any? {
        let result = try await call(
            "Runtime.evaluate", ["expression": expression, "returnByValue": true], inPage: true)
        return (result["result"] as? [String: Any])?["value"]
    }

    func screenshot() async throws -> Data {
        let result = try await call("Page.captureScreenshot", ["format": "png"], inPage: true)
        guard let base64 = result["data"] as? String, let data = Data(base64Encoded: base64) else {
            throw Failure("no screenshot")
        }
        return data
    }

    func close() {
        _ = try? send(["id": 1_000_000, "method": "Browser.close"])
        Glibc.close(toBrowser)
        for _ in 0..<100 where process.isRunning { usleep(20_000) }  // clock-ok: a real process exiting, bounded
        process.kill(SIGKILL)
        process.waitUntilExit()
        Glibc.close(fromBrowser)
        try? FileManager.default.removeItem(atPath: profile)
    }

    private func call(_ method: String, _ params: [String: Any], inPage: Bool = false) async throws -> [String: Any] {
        nextID += 1
        let id = nextID
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if inPage { message["sessionId"] = session }
        try send(message)
        while true {
            let reply = try await receive()
            guard reply["id"] as? Int == id else { continue }  // events, and answers to others
            if let error = reply["error"] { throw Failure("\(method): \(error)") }
            return reply["result"] as? [String: Any] ?? [:]
        }
    }

    private func send(_ message: [String: Any]) throws {
        var bytes = [UInt8](try JSONSerialization.data(withJSONObject: message))
        bytes.append(0)
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { write(toBrowser, $0.baseAddress, $0.count) }
            guard n > 0 else { throw Failure("chromium's pipe closed") }
            written += n
        }
    }

    /// The next message (bounded: chromium answers within seconds or the test fails).
    private func receive() async throws -> [String: Any] {
        while true {
            if let end = pending.firstIndex(of: 0) {
                let message = Array(pending[..<end])
                pending.removeFirst(end + 1)
                return try JSONSerialization.jsonObject(with: Data(message)) as? [String: Any] ?? [:]
            }
            let fd = fromBrowser
            let chunk: [UInt8] = try await withCheckedThrowingContinuation { continuation in
                queue.async {
                    var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    guard poll(&poller, 1, 30_000) == 1 else {
                        return continuation.resume(throwing: Failure("chromium did not answer within 30 s"))
                    }
                    var buffer = [UInt8](repeating: 0, count: 1 << 16)
                    let n = read(fd, &buffer, buffer.count)
                    guard n > 0 else { return continuation.resume(throwing: Failure("chromium's pipe closed")) }
                    continuation.resume(returning: Array(buffer[..<n]))
                }
            }
            pending += chunk
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
