import Foundation
import TestSupport
import Testing

/// Every `swift` block of the README and of the DocC articles, type-checked against the modules this build made:
/// an example that no longer compiles fails here, not in an app developer's editor. Blocks that need an Apple-only
/// framework (SwiftUI, HealthKit, BackgroundTasks) cannot compile on Linux: the test names them, and the Apple kit
/// type-checks the library code they call.
@Suite("The documentation's Swift examples compile")
struct DocumentedExamplesTests {
    /// What the examples assume exists around them: an app's directories and keychain, a ledger.
    static let preamble = """
        import Foundation
        import MoodLedger
        import MoodLedgerSync
        import MoodInterchange
        import Observation

        let documents = URL(fileURLWithPath: NSTemporaryDirectory())
        let directory = documents
        let path = NSTemporaryDirectory() + "mood.ledger"
        struct Keychain: Sendable { func credentials() async throws -> SyncCredentials { SyncCredentials() } }
        let keychain = Keychain()
        let id = EntryID(high: 0, low: 1)
        let ledger: Ledger = try! Ledger.open(at: path)
        #if !canImport(Darwin)
            extension FileManager {  // Apple's App Group container, which Linux's Foundation lacks
                func containerURL(forSecurityApplicationGroupIdentifier group: String) -> URL? { nil }
            }
        #endif

        """

    static let documents = [
        "README.md", "Sources/MoodLedger/MoodLedger.docc/MoodLedger.md",
        "Sources/MoodLedger/MoodLedger.docc/UsingMoodLedgerInAnApp.md",
        "Sources/MoodLedger/MoodLedger.docc/DebuggingSyncWithTimeTravel.md"
    ]

    /// The `swift` blocks of a Markdown text.
    static func blocks(_ text: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.trimmingCharacters(in: .whitespaces) == "```swift" {
                current = []
            } else if current != nil, line.trimmingCharacters(in: .whitespaces) == "```" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    /// A block's declarations go at file scope; statements into an async throwing function of their own.
    static func source(of block: String, index: Int) -> String {
        let lines = block.split(separator: "\n", omittingEmptySubsequences: false)
        let declares = lines.contains { line in
            ["struct ", "final class ", "class ", "extension ", "@MainActor", "func ", "enum "].contains {
                line.hasPrefix($0)
            }
        }
        let body = lines.filter { !$0.hasPrefix("import ") }.joined(separator: "\n")
        return declares ? body + "\n" : "func example\(index)() async throws {\n\(body)\n}\n"
    }

    @Test("README and DocC: each swift block type-checks in Swift 6 mode against the built modules")
    func examplesCompile() throws {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let modules = try #require(
            [beside.path, beside.deletingLastPathComponent().path, Repository.root + "/.build/debug"]
                .map { $0 + "/Modules" }
                .first { FileManager.default.fileExists(atPath: $0 + "/MoodLedger.swiftmodule") },
            "the build's module directory")
        let dir = TemporaryDirectory("examples")
        var checked = 0
        var appleOnly: [String] = []
        for document in Self.documents {
            let text = try String(contentsOfFile: Repository.root + "/" + document, encoding: .utf8)
            var source = Self.preamble
            for (index, block) in Self.blocks(text).enumerated() {
                if block.contains("import SwiftUI") || block.contains("HKHealthStoreAdapter")
                    || block.contains("BackgroundSync(")
                {
                    appleOnly.append("\(document) block \(index + 1)")
                    continue
                }
                source += "\n// \(document), block \(index + 1)\n" + Self.source(of: block, index: index)
                checked += 1
            }
            let file = dir.sub(document.replacingOccurrences(of: "/", with: "_") + ".swift")
            try source.write(toFile: file, atomically: true, encoding: .utf8)
            let outcome = try Tool.run(
                [
                    "swiftc", "-typecheck", "-swift-version", "6", "-I", modules, "-Xcc",
                    "-fmodule-map-file=\(Repository.root)/Sources/CPlatform/include/module.modulemap", file
                ], executable: "/usr/bin/env")
            #expect(outcome.code == 0, "\(document):\n\(outcome.err)\n\(source)")
        }
        #expect(checked >= 10, "blocks type-checked: \(checked)")
        print("type-checked \(checked) blocks; Apple-only, for the Apple kit: \(appleOnly.joined(separator: ", "))")
    }
}
