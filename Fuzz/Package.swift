// swift-tools-version:6.0
// The libFuzzer driver: built only by `make fuzz`, with `-sanitize=fuzzer,address` in its own scratch path, so the
// root package never needs fuzzer flags. The targets themselves live in the root package (`SwitchboardFuzzTargets`),
// which the plain test suite replays.
import Foundation
import PackageDescription

/// The root package's identity: the name of the checkout's folder, as SwiftPM names a package found by path.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "SwitchboardFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "..")],
    targets: [
        .systemLibrary(name: "CLibFuzzer", path: "Sources/CLibFuzzer"),
        .executableTarget(name: "switchboard-fuzz",
                          dependencies: ["CLibFuzzer", .product(name: "SwitchboardFuzzTargets", package: root)],
                          path: "Sources/switchboard-fuzz"),
    ],
    swiftLanguageModes: [.v6]
)
