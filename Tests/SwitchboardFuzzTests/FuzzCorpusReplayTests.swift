import Foundation
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

    @Test("each corpus folder belongs to a target, and target names are unique")
    func corpusFoldersMatchTargets() throws {
        let names = FuzzTargets.all.map(\.name)
        #expect(Set(names).count == names.count)
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.corpusRoot.path).filter { !$0.hasPrefix(".") }
        #expect(Set(folders) == Set(names))
    }
}
