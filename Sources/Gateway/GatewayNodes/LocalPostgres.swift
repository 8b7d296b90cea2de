import ChildProcess
import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A PostgreSQL server of the fleet's own, for a machine where `pushgate fleet up` is given no database:
/// Debian's server binaries (`apt-get install postgresql`), a cluster in the fleet's directory, listening
/// on loopback only, with a role `pushgate` whose password is made here and kept beside the cluster
/// (0600). As root the server runs as the `postgres` user (PostgreSQL refuses to run as root), the way
/// `.ci/postgres.sh` runs Debian's own cluster; when that user cannot reach the fleet's directory (it is
/// under `/root`, or in a 0700 directory such as a fresh `mktemp -d`), the cluster's files go to a
/// directory of their own in that user's home (Debian's `/var/lib/postgresql`, named by a digest of the
/// fleet's directory) and the fleet's directory links to it.
public struct LocalPostgres {
    /// The cluster's directory (`<data_dir>/fleet/postgres`).
    public let directory: String
    public let port: Int

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public var url: String { "postgres://pushgate:\(password ?? "")@127.0.0.1:\(port)/pushgate" }
    private var passwordPath: String { directory + ".password" }
    private var password: String? {
        (try? String(contentsOfFile: passwordPath, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Debian's newest installed server: `/usr/lib/postgresql/<version>/bin`.
    public static func binaries() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init).sorted()
        for version in versions.reversed() {
            let bin = "\(root)/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: bin + "/initdb") { return bin }
        }
        return nil
    }

    /// Makes the cluster if it is not there, starts it, and makes the database; returns its URL.
    public func start(log: String) throws -> String {
        guard let bin = Self.binaries() else {
            throw Failure(
                description:
                    "no PostgreSQL server is installed (apt-get install postgresql), and neither --postgres-url nor store.postgres.url names a database"
            )
        }
        let root = geteuid() == 0
        if !FileManager.default.fileExists(atPath: directory + "/PG_VERSION") {
            let cluster = try makeClusterDirectory(root: root, log: log)
            let secret = Self.newPassword()
            // initdb reads the password from a file the server's user can read (removed after; the fleet
            // keeps its own copy beside the directory), and wants the directory empty.
            let once = cluster + ".initdb-password"
            try Self.writePrivate(secret, to: once)
            try Self.writePrivate(secret, to: passwordPath)
            if root { try run("/bin/chown", ["-R", "postgres:postgres", cluster, once], log: log) }
            // The C locale: keys (ids, tokens) are compared byte by byte, whatever the machine's locale
            // (a wave's text comparisons under `C.UTF-8` were about 2.4 % of PostgreSQL's samples,
            // Benchmarks/HISTORY.md; under a language's locale they cost more). Nothing is shown sorted.
            try run(
                bin + "/initdb",
                [
                    "-D", cluster, "-U", "pushgate", "--pwfile=\(once)", "--auth=scram-sha-256", "--encoding=UTF8",
                    "--locale=C", "--no-instructions",
                ], asServer: root, log: log)
            try? FileManager.default.removeItem(atPath: once)
        }
        // The server's user names the cluster by its real path (the link may lie where it cannot go).
        let cluster = (directory as NSString).resolvingSymlinksInPath
        guard let secret = password else {
            throw Failure(description: "the fleet's PostgreSQL at \(directory) has no password file \(passwordPath)")
        }
        // Loopback only, its socket in its own directory (not /var/run/postgresql), enough connections for
        // ten nodes' pools.
        try run(
            bin + "/pg_ctl",
            [
                "-D", cluster, "-l", cluster + "/server.log", "-w", "-t", "60", "-o",
                "-p \(port) -c listen_addresses=127.0.0.1 -k \(cluster) -c max_connections=200", "start",
            ], asServer: root, log: log)
        // The database (again after a restart: "already exists" is fine).
        try? run(
            bin + "/createdb", ["-h", "127.0.0.1", "-p", "\(port)", "-U", "pushgate", "pushgate"],
            environment: ["PGPASSWORD": secret], log: log)
        return url
    }

    /// Stops the server (fast: open connections are closed); nothing to do when it is not running.
    public func stop(log: String) throws {
        guard let bin = Self.binaries(), FileManager.default.fileExists(atPath: directory + "/postmaster.pid") else {
            return
        }
        let cluster = (directory as NSString).resolvingSymlinksInPath
        try run(
            bin + "/pg_ctl", ["-D", cluster, "-m", "fast", "-w", "-t", "60", "stop"], asServer: geteuid() == 0,
            log: log)
    }

    /// The new cluster's directory, empty: `directory`, or as root, when the server's user cannot reach
    /// it, a directory in that user's home that `directory` links to.
    private func makeClusterDirectory(root: Bool, log: String) throws -> String {
        let files = FileManager.default
        let parent = (directory as NSString).deletingLastPathComponent
        try files.createDirectory(atPath: parent, withIntermediateDirectories: true)
        guard root, !serverReaches(parent, log: log) else {
            try files.createDirectory(atPath: directory, withIntermediateDirectories: true)
            return directory
        }
        guard let entry = getpwnam("postgres"), let home = entry.pointee.pw_dir.map({ String(cString: $0) }),
            serverReaches(home, log: log)
        else {
            throw Failure(
                description:
                    "the fleet's PostgreSQL runs as the postgres user, which can reach neither \(parent) nor a home of its own; give it one, or name a database with --postgres-url"
            )
        }
        let digest = SHA256.hash(data: Data(directory.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
        let cluster = home + "/pushgate-fleet-" + digest
        // A directory left by an initdb that failed, here or there, is empty or unusable: made anew.
        try? files.removeItem(atPath: cluster)
        try? files.removeItem(atPath: directory)
        try files.createDirectory(
            atPath: cluster, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        try files.createSymbolicLink(atPath: directory, withDestinationPath: cluster)
        return cluster
    }

    /// Whether the server's user (`postgres`) can search `path` (and so every directory above it).
    private func serverReaches(_ path: String, log: String) -> Bool {
        (try? run("/usr/bin/test", ["-x", path], asServer: true, log: log)) != nil
    }

    /// Runs a tool to its end, its output appended to `log`; fails naming the tool and the log.
    private func run(
        _ tool: String, _ arguments: [String], asServer: Bool = false, environment: [String: String] = [:],
        log: String
    ) throws {
        let (executable, all) =
            asServer ? ("/usr/sbin/runuser", ["-u", "postgres", "--", tool] + arguments) : (tool, arguments)
        let process = try ChildProcess(
            executable, all, stdout: .file(log), stderr: .file(log), environment: environment)
        let status = process.waitUntilExit()
        guard status == 0 else {
            throw Failure(
                description: "\((tool as NSString).lastPathComponent) failed (exit status \(status)); see \(log)")
        }
    }

    private static func newPassword() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { bytes in bytes.map { String(format: "%02x", $0) }.joined() }
    }

    private static func writePrivate(_ text: String, to path: String) throws {
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data((text + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else { throw Failure(description: "cannot write \(path)") }
    }
}
