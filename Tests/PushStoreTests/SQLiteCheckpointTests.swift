import Foundation
import PushModel
import PushStore
import Testing

@Suite struct SQLiteCheckpointTests {
    /// Checkpoints run beside the writer; the writer checkpoints itself past twice the threshold, so
    /// the WAL stays a few thresholds long however much is committed, and nothing committed is lost.
    @Test func theWALStaysBoundedAndEveryCommitSurvives() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pushgate-checkpoint-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("pushgate.sqlite").path
        let threshold: Int32 = 16
        let store = try SQLiteStore(path: path, synchronous: .normal, checkpointPages: threshold)
        _ = try await store.open(now: StoreContractTests.t0)
        let payload = [UInt8](repeating: UInt8(ascii: "x"), count: 600)
        var largestWAL = 0
        for commit in 0..<120 {
            var batch = StoreBatch()
            batch.notifications = (0..<40).map { Samples.stored(commit * 40 + $0 + 1, payload: payload) }
            try await store.commit(batch)
            let attributes = try? FileManager.default.attributesOfItem(atPath: path + "-wal")
            largestWAL = max(largestWAL, attributes?[.size] as? Int ?? 0)
        }
        // 4,800 rows of ~700 bytes: ~800 pages of data, which without checkpoints would all be in the WAL;
        // with them, at most twice the threshold and one commit (a frame is a page and a 24-byte header).
        #expect(largestWAL > 0)
        #expect(largestWAL < Int(threshold) * 4 * (4096 + 24))
        try await store.close()

        let reopened = try SQLiteStore(path: path)
        let snapshot = try await reopened.open(now: StoreContractTests.t0)
        #expect(snapshot.pending.count == 4800)
        try await reopened.close()
    }
}
