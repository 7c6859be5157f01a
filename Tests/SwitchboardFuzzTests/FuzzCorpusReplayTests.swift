import Foundation
import SwitchboardConfig
import SwitchboardFuzzTargets
import Testing

/// Replays the committed, minimised fuzz corpora (`Fuzz/Corpus/<target>/`) through the same entry points
/// `make fuzz` drives, in a plain build: every input that once crashed or broke an invariant stays fixed.
@Suite struct FuzzCorpusReplayTests {
    /// `Fuzz/Corpus`, found from this file's place in the checkout.
    static let corpusRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus")

    static func inputs(of target: String) throws -> [URL] {
        let folder = corpusRoot.appendingPathComponent(target)
        return try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    @Test("every committed input of the target runs clean", arguments: FuzzTargets.all.map(\.name))
    func replay(target name: String) throws {
        let target = try #require(FuzzTargets.named(name))
        let inputs = try Self.inputs(of: name)
        #expect(!inputs.isEmpty, "no corpus committed for \(name)")
        for input in inputs {
            let bytes = [UInt8](try Data(contentsOf: input))
            do {
                try target.run(bytes)
            } catch {
                Issue.record("\(name)/\(input.lastPathComponent): \(error)")
            }
        }
    }

    @Test("the config corpus holds accepted configs and endpoints, so the target's checks of accepted ones run")
    func configCorpusReachesAcceptance() throws {
        var configs = 0, endpoints = 0
        for input in try Self.inputs(of: "bridge-config") {
            guard let json = try? AdapterEndpoint.parseJSON(String(decoding: try Data(contentsOf: input), as: UTF8.self),
                                                            path: "config") else { continue }
            let base = URL(fileURLWithPath: "/fuzz/config")
            if (try? BridgeConfigFile.parse(json, baseDirectory: base)) != nil { configs += 1 }
            if (try? AdapterEndpoint.parse(json, path: "--from", baseDirectory: base)) != nil { endpoints += 1 }
        }
        #expect(configs >= 2, "accepted configs in the corpus: \(configs)")
        #expect(endpoints >= 2, "accepted endpoints in the corpus: \(endpoints)")
    }

    @Test("each corpus folder belongs to a target, and target names are unique")
    func corpusFoldersMatchTargets() throws {
        let names = FuzzTargets.all.map(\.name)
        #expect(Set(names).count == names.count)
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.corpusRoot.path).filter { !$0.hasPrefix(".") }
        #expect(Set(folders) == Set(names))
    }
}
