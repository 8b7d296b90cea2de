import Foundation

/// The inputs kept in the repository: Fuzz/corpus/<target>/ (seeds and what fuzzing found that adds
/// coverage) and Fuzz/regressions/<target>/ (every input that once broke an invariant or crashed).
public enum FuzzCorpus {
    /// The file itself, or the files of a directory (sorted; none if it does not exist).
    public static func files(at path: String) throws -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return [] }
        guard isDirectory.boolValue else { return [path] }
        return try FileManager.default.contentsOfDirectory(atPath: path).sorted()
            .filter { !$0.hasPrefix(".") }.map { path + "/" + $0 }
    }

    public static func read(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// The directories of `target` under the repository's Fuzz/ folder.
    public static func directories(of target: FuzzTarget, root: String) -> [String] {
        [root + "/Fuzz/corpus/" + target.rawValue, root + "/Fuzz/regressions/" + target.rawValue]
    }
}
