import Foundation
import TestSupport
import Testing

/// The README's tour runs as pasted: every block fenced `sh`, in order, in one shell, in an empty directory, against
/// the built `moodledger`. Blocks fenced `shell` build the package itself (what made the binary under test) and
/// are not run here.
@Suite("README")
struct ReadmeTests {
    static func shellBlocks(_ markdown: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```sh" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    @Test("Every sh block of the README runs, in order, in an empty directory, and exits 0")
    func tourRunsAsPasted() throws {
        let readme = try String(contentsOfFile: Repository.root + "/README.md", encoding: .utf8)
        let blocks = Self.shellBlocks(readme)
        #expect(blocks.count >= 4, "the README's tour has its blocks")
        let dir = TemporaryDirectory("readme")
        let binaries = URL(fileURLWithPath: Repository.executable("moodledger")).deletingLastPathComponent().path
        // Fail at the first command that fails, naming it; stop any server a failed block left running.
        let script = """
            set -eo pipefail
            trap 'echo "README command failed (exit $?): $BASH_COMMAND" >&2' ERR
            trap 'kill $(jobs -p) 2>/dev/null || true' EXIT

            """ + blocks.joined(separator: "\n")
        try script.write(toFile: dir.sub("tour.sh"), atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("MOODLEDGER_") }
        environment["PATH"] = binaries + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["HOME"] = dir.path
        let outcome = try Tool.run(
            ["timeout", "300", "bash", dir.sub("tour.sh")], executable: "/usr/bin/env",
            environment: environment, directory: dir.path)
        #expect(outcome.code == 0, "stderr:\n\(outcome.err)\nstdout:\n\(outcome.out.suffix(3000))")
        // What the tour promises to leave behind is there.
        #expect(FileManager.default.fileExists(atPath: dir.sub("mood-tour/mood.html")))
        #expect(outcome.out.contains("listening") == false, "the server's own output went to its file")
    }
}
