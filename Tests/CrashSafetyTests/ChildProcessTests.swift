import ChildProcess
import Foundation
import Testing
import TestSupport

/// The tests' own process launcher (posix_spawn, since Foundation's `Process.run()` crashes now and then
/// on this toolchain): exit codes, signals, redirection, and nothing of the test process leaking into a
/// child but what it is given.
struct ChildProcessTests {
    @Test func exitCodesAndSignalsAreReported() throws {
        #expect(try ChildProcess("sh", ["-c", "exit 3"]).waitUntilExit() == 3)
        #expect(try ChildProcess("/bin/sh", ["-c", "true"]).waitUntilExit() == 0)
        #expect(try ChildProcess("sh", ["-c", "kill -9 $$"]).waitUntilExit() == 128 + SIGKILL)
        #expect(throws: SpawnFailed.self) { try ChildProcess("/nonexistent/tool", []) }
    }

    @Test func theChildGetsItsRedirectionsAndNoOtherDescriptor() throws {
        let directory = try temporaryDirectory("pushgate-child")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = directory + "/out.txt"
        // A descriptor this process holds open without close-on-exec: the child must not see it.
        let held = open(directory + "/held", O_CREAT | O_WRONLY, 0o644)
        defer { close(held) }
        let extra = Pipe()
        let child = try ChildProcess(
            "sh", ["-c", "echo out; echo err >&2; echo three >&3; ls /proc/self/fd"], stdout: .file(output),
            stderr: .file(output), descriptors: [3: extra.fileHandleForWriting.fileDescriptor])
        try extra.fileHandleForWriting.close()
        #expect(child.waitUntilExit() == 0)
        #expect(child.exitStatus == 0 && !child.isRunning)
        #expect(String(decoding: extra.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "three\n")
        let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.prefix(2) == ["out", "err"])
        // ls sees 0, 1, 2, 3 and its own directory handle: nothing numbered like `held`.
        let descriptors = Set(lines.dropFirst(2).compactMap { Int32($0) })
        #expect(descriptors.isSubset(of: [0, 1, 2, 3, 4]), "the child inherited \(descriptors)")
        #expect(!descriptors.contains(held) || held <= 4)
    }
}
