// The fuzz targets (ConvoyFuzz) as one executable. Built by scripts/fuzz with -sanitize=fuzzer,address and
// -DCONVOY_LIBFUZZER it is a libFuzzer binary: CONVOY_FUZZ_TARGET names the target, the rest is libFuzzer's
// command line. Built plainly it replays inputs: `convoy-fuzz TARGET FILE|DIR…` (exit 1 if an invariant
// breaks), `convoy-fuzz --list`.
import ConvoyFuzz
import Foundation

#if CONVOY_LIBFUZZER
private let chosen: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["CONVOY_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTargets.named(name) else {
        FileHandle.standardError.write(Data("convoy-fuzz: CONVOY_FUZZ_TARGET=\(name) is none of \(FuzzTargets.all.map(\.name).joined(separator: ", "))\n".utf8))
        exit(2)
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let broken = chosen.check(UnsafeRawBufferPointer(start: data, count: size)).broken
    if !broken.isEmpty {
        FileHandle.standardError.write(Data("convoy-fuzz \(chosen.name): an invariant broke:\n\(broken.joined(separator: "\n"))\n".utf8))
        abort()
    }
    return 0
}
@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                       _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// SwiftPM links an executable's entry point as `<module>_main` (`--defsym main=convoy_fuzz_main`), so libFuzzer's
/// own `main` is not linked: its driver is started from here.
@_cdecl("convoy_fuzz_main")
public func convoyFuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var (count, values) = (argc, argv)
    chosen.prepare()
    return runDriver(&count, &values) { data, size in fuzzOne(data, size) }
}
#else
/// The plain build: a replay of files through a target's invariants.
@main
enum ConvoyFuzzReplay {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "--list" {
            for t in FuzzTargets.all { print("\(t.name)\t\(t.summary)") }
            exit(0)
        }
        guard arguments.count >= 2, let target = FuzzTargets.named(arguments[0]) else {
            FileHandle.standardError.write(Data("usage: convoy-fuzz TARGET FILE|DIR… (targets: \(FuzzTargets.all.map(\.name).joined(separator: ", "))), or convoy-fuzz --list\n".utf8))
            exit(2)
        }
        var failed = false
        for path in arguments.dropFirst() {
            let files = FuzzInputs.files(at: path)
            if files.isEmpty {
                FileHandle.standardError.write(Data("convoy-fuzz: \(path): no such file or folder\n".utf8))
                exit(2)
            }
            for file in files {
                let broken = target.check(Array(FileManager.default.contents(atPath: file) ?? Data())).broken
                print(broken.isEmpty ? "ok      \(file)" : "BROKEN  \(file)\n" + broken.map { "        \($0)" }.joined(separator: "\n"))
                failed = failed || !broken.isEmpty
            }
        }
        exit(failed ? 1 : 0)
    }
}
#endif
