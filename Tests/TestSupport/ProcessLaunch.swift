import Foundation
import Synchronization

/// Starts child processes one at a time. Foundation's `Process.run()` on Linux crashed once (SIGSEGV in
/// a memcpy inside `run`) while suites launched curl and `pushgate serve` children at the same moment;
/// launching under one lock keeps the launches apart (the children still run side by side).
public enum ProcessLaunch {
    private static let lock = Mutex(())

    public static func run(_ process: Process) throws {
        try lock.withLock { _ in try process.run() }
    }
}
