import CLibFuzzer
import Foundation
import SwitchboardFuzzTargets

// `switchboard-fuzz TARGET [libFuzzer flags and corpus folders]` runs libFuzzer on one target;
// `switchboard-fuzz --list` prints the target names, one a line.

/// The target the callback feeds (set once, before libFuzzer starts).
nonisolated(unsafe) var selectedTarget: FuzzTarget?

/// libFuzzer's usual entry point, never called here (`LLVMFuzzerRunDriver` gets the callback); defining it keeps the
/// fuzzer runtime's references resolved, which the gold linker otherwise crashes on.
@_cdecl("LLVMFuzzerTestOneInput")
public func LLVMFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 { 0 }

let arguments = CommandLine.arguments
if arguments.count >= 2, arguments[1] == "--list" {
    for target in FuzzTargets.all { print(target.name) }
    exit(0)
}
// The target comes from the first argument; libFuzzer's own child processes (`-merge=1`, `-fork`) get the flags
// without it, so it is also passed down in the environment.
let environmentKey = "SWITCHBOARD_FUZZ_TARGET"
let named = arguments.count >= 2 ? FuzzTargets.named(arguments[1]) : nil
guard let target = named ?? ProcessInfo.processInfo.environment[environmentKey].flatMap(FuzzTargets.named) else {
    let names = FuzzTargets.all.map { "  \($0.name.padding(toLength: 18, withPad: " ", startingAt: 0)) \($0.summary)" }
    FileHandle.standardError.write(Data(("usage: switchboard-fuzz TARGET [libFuzzer flags] [CORPUS ...]\n"
        + "       switchboard-fuzz --list\ntargets:\n" + names.joined(separator: "\n") + "\n").utf8))
    exit(2)
}
setenv(environmentKey, target.name, 1)
selectedTarget = target

/// libFuzzer's callback: runs the selected target on one input.
func runSelectedTarget(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do {
        try selectedTarget!.run(bytes)
    } catch {
        // A broken invariant is a finding: abort so libFuzzer saves the input.
        FileHandle.standardError.write(Data("switchboard-fuzz: \(error)\n".utf8))
        abort()
    }
    return 0
}

// libFuzzer sees the program name and everything after the target name.
var cArguments: [UnsafeMutablePointer<CChar>?] = ([arguments[0]] + arguments.dropFirst(named == nil ? 1 : 2)).map { strdup($0) } + [nil]
var argc = Int32(cArguments.count - 1)
let status = cArguments.withUnsafeMutableBufferPointer { buffer -> Int32 in
    var argv = buffer.baseAddress
    return LLVMFuzzerRunDriver(&argc, &argv, runSelectedTarget)
}
exit(status)
