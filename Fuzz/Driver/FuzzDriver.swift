import Foundation
import FuzzTargets

// Built two ways. By Fuzz/run.sh with `-sanitize=fuzzer -D FUZZING`: libFuzzer's main drives
// `LLVMFuzzerTestOneInput` with the target named by FUZZ_TARGET. By a plain `swift build`: a command that
// replays files through a target (`pushgate-fuzz <target> <file or directory>…`), e.g. a crash libFuzzer
// wrote, under a debugger.

#if FUZZING
    let target: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            fatalError("FUZZ_TARGET must be one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return target
    }()

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        target.run(UnsafeRawBufferPointer(start: data, count: size))
        return 0
    }

    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzer(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    // SwiftPM links an executable's `main` to `<module>_main` (so tests can link the module): libFuzzer's
    // driver is started from here rather than from its own `main`.
    @_cdecl("pushgate_fuzz_main")
    public func fuzzMain(
        _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
    ) -> CInt {
        var count = argc
        var arguments = argv
        return runFuzzer(&count, &arguments, fuzzOneInput)
    }
#else
    @main
    enum FuzzDriver {
        static func main() throws {
            let arguments = CommandLine.arguments.dropFirst()
            if arguments.first == "seed", arguments.count == 2 {
                // pushgate-fuzz seed <repository root>: writes every target's seeds into Fuzz/corpus/<target>/.
                let root = arguments.last!
                for target in FuzzTarget.allCases {
                    let directory = root + "/Fuzz/corpus/" + target.rawValue
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                    for (name, bytes) in FuzzSeeds.seeds(for: target, root: root) {
                        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/seed-" + name))
                    }
                }
                return
            }
            guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
                let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
                FileHandle.standardError.write(
                    Data(
                        "usage: pushgate-fuzz <\(names)> <file or directory>…\n       pushgate-fuzz seed <repository root>\n"
                            .utf8))
                exit(2)
            }
            var count = 0
            for path in arguments.dropFirst() {
                for file in try FuzzCorpus.files(at: path) {
                    target.run(try FuzzCorpus.read(file))
                    count += 1
                }
            }
            print("\(target.rawValue): \(count) inputs, no failure")
        }
    }
#endif
