import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A child process started with `posix_spawn`. Not Foundation's `Process`: in Swift 6.3.1 its `run()`
/// lists `/proc/self/fd` by copying each `dirent`'s whole 256-byte name, reading past glibc's buffer
/// when a short record ends a page (swift-corelibs-foundation#5472, fixed after 6.3.1): a SIGSEGV in a
/// memcpy inside `run()` that killed the whole test run now and then, with launches serialized or not.
///
/// The child inherits the environment (plus `environment`) and only the descriptors it is given: 0, 1, 2
/// (each `/dev/null` unless redirected) and `descriptors`; everything else is closed in it. With
/// `newSession` it leads a session of its own (setsid): a daemon that outlives the command that started
/// it and its terminal's hangup (`pushgate fleet up`).
public final class ChildProcess: Sendable {
    /// Where one of the child's standard descriptors goes.
    public enum Redirect: Sendable {
        case null
        /// A file, created if missing; written at its end (standard output and error) or read.
        case file(String)
        /// A descriptor of this process (a pipe's end, say), duplicated into the child; the caller closes
        /// its own copy.
        case descriptor(Int32)
    }

    public let pid: pid_t

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module
    /// does not import: looked up by name.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? =
        {
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
            else { return nil }
            return unsafeBitCast(
                symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        }()
    /// The exit status once reaped: the exit code, or 128 + the signal that ended it.
    private let reaped = Mutex<Int32?>(nil)

    /// Starts `executable` (a path, or a name looked up on PATH) with `arguments`. `descriptors` maps a
    /// descriptor number in the child to one of this process's.
    public init(
        _ executable: String, _ arguments: [String], stdin: Redirect = .null, stdout: Redirect = .null,
        stderr: Redirect = .null, descriptors: [Int32: Int32] = [:], environment: [String: String] = [:],
        newSession: Bool = false
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // A source numbered at or below a target could be overwritten by an earlier dup2 in the child:
        // such sources are first copied above every target (close-on-exec, closed here after the spawn).
        let highest = max(2, descriptors.keys.max() ?? 2)
        var copies: [Int32] = []
        defer { for copy in copies { _ = Glibc.close(copy) } }
        func safe(_ source: Int32) -> Int32 {
            guard source <= highest else { return source }
            let copy = fcntl(source, F_DUPFD_CLOEXEC, highest + 1)
            copies.append(copy)
            return copy
        }
        for (target, redirect) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch redirect {
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_RDWR, 0)
            case .file(let path):
                let flags = target == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_APPEND
                posix_spawn_file_actions_addopen(&actions, target, path, flags, 0o644)
            case .descriptor(let source):
                posix_spawn_file_actions_adddup2(&actions, safe(source), target)
            }
        }
        for (target, source) in descriptors.sorted(by: { $0.key < $1.key }) {
            posix_spawn_file_actions_adddup2(&actions, safe(source), target)
        }
        _ = Self.closeFrom?(&actions, highest + 1)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // POSIX_SPAWN_SETSID (glibc 2.26), a macro Swift does not import.
        if newSession { posix_spawnattr_setflags(&attributes, 0x80) }
        var inherited: [String] = []
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            let name = text.prefix { $0 != "=" }
            if environment[String(name)] == nil { inherited.append(text) }
            index += 1
        }
        let envp =
            (inherited + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).map { strdup($0) }
            + [nil]
        defer { for entry in envp { free(entry) } }
        var child: pid_t = 0
        let spawned =
            executable.contains("/")
            ? posix_spawn(&child, executable, &actions, &attributes, argv, envp)
            : posix_spawnp(&child, executable, &actions, &attributes, argv, envp)
        guard spawned == 0 else { throw SpawnFailed(executable: executable, code: spawned) }
        pid = child
    }

    /// Whether process `pid` runs (any process, one this process did not start too). A zombie — exited,
    /// not yet reaped by a parent that is gone or never reaps, as a container's first process may not —
    /// does not run.
    public static func exists(_ pid: pid_t) -> Bool {
        guard pid > 0, Glibc.kill(pid, 0) == 0 || errno == EPERM else { return false }
        // /proc/<pid>/stat: "pid (name) state …"; the name may hold spaces and parentheses.
        guard let file = fopen("/proc/\(pid)/stat", "r") else { return true }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 512)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return true }
        let line = String(cString: buffer)
        guard let close = line.lastIndex(of: ")") else { return true }
        let state = line[line.index(after: close)...].drop { $0 == " " }.first
        return state != "Z" && state != "X"
    }

    public func kill(_ signal: Int32) {
        guard isRunning else { return }
        _ = Glibc.kill(pid, signal)
    }

    /// Asks the kernel without waiting (and reaps the child if it has exited).
    public var isRunning: Bool { reap(waiting: false) == nil }

    /// The exit status once exited: the exit code, or 128 + the signal that ended it.
    public var exitStatus: Int32? { reap(waiting: false) }

    /// Blocks until the child exits; its exit status.
    @discardableResult
    public func waitUntilExit() -> Int32 { reap(waiting: true) ?? -1 }

    private func reap(waiting: Bool) -> Int32? {
        reaped.withLock { reaped in
            if let reaped { return reaped }
            var status: Int32 = 0
            while true {
                let result = waitpid(pid, &status, waiting ? 0 : WNOHANG)
                if result == 0 { return nil }
                if result < 0 {
                    if errno == EINTR { continue }
                    return nil
                }
                break
            }
            // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as macros.
            let signal = status & 0x7f
            reaped = signal == 0 ? (status >> 8) & 0xff : 128 + signal
            return reaped
        }
    }
}

public struct SpawnFailed: Error, CustomStringConvertible {
    public var executable: String
    public var code: Int32
    public var description: String { "cannot start \(executable): \(String(cString: strerror(code)))" }
}
