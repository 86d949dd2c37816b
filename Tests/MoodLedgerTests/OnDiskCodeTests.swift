import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

/// Every on-disk code in the source equals the table of `Specs/events.md` that defines it: the codes are written
/// out in the source (never derived from the order of cases), and this reads the spec itself.
@Suite("On-disk codes match Specs/events.md")
struct OnDiskCodeTests {
    static let spec = (try? String(contentsOfFile: Repository.root + "/Specs/events.md", encoding: .utf8)) ?? ""

    /// `N name` pairs of a list like `0 manual, 1 healthkit` (names optionally in backticks), after `label`.
    static func pairs(after label: String) -> [(Int, String)] {
        guard let start = spec.range(of: label) else { return [] }
        var result: [(Int, String)] = []
        let tail = spec[start.upperBound...].prefix(400)
        let pattern = /(\d+) `?([a-z_-]+)`?/
        for match in tail.matches(of: pattern) {
            guard let code = Int(match.output.1) else { continue }
            if code != result.count { break }  // a list runs 0, 1, 2 … in order
            result.append((code, String(match.output.2)))
        }
        return result
    }

    @Test("Event types: the catalog's code, name and current version for each, and nothing else")
    func eventTypes() throws {
        let rows = Self.spec.matches(of: /\n\| (\d+) \| `([a-z_.]+)` \| (\d+) \|/).map {
            (Int($0.output.1)!, String($0.output.2), Int($0.output.3)!)
        }
        #expect(rows.count == EventType.allCases.count, "\(rows)")
        for (code, name, version) in rows {
            let type = EventType(rawValue: UInt16(code))
            #expect(type?.name == name, "code \(code) is \(name) in the spec")
            #expect(type.map { Int($0.currentVersion) } == version, "\(name) is version \(version) in the spec")
        }
    }

    @Test("Sources, destinations, operations, dialects and capability bits")
    func smallCodes() {
        let sources = Self.pairs(after: "source: ")
        #expect(sources.count == MoodSource.allCases.count, "\(sources)")
        for (code, name) in sources { #expect(MoodSource(code: UInt8(code))?.rawValue == name, "source \(code)") }
        for source in MoodSource.allCases { #expect(MoodSource(code: source.code) == source) }

        let destinations = Self.pairs(after: "Destinations: ")
        #expect(destinations.count == SyncDestination.allCases.count, "\(destinations)")
        for (code, name) in destinations {
            #expect(SyncDestination.allCases.first { $0.code == UInt8(code) }?.rawValue == name, "destination \(code)")
        }

        let operations = Self.pairs(after: "Operations:")
        #expect(operations.count == SyncOperation.allCases.count, "\(operations)")
        for (code, name) in operations {
            #expect(SyncOperation(code: UInt8(code))?.rawValue == name, "operation \(code)")
        }
        for operation in SyncOperation.allCases { #expect(SyncOperation(code: operation.code) == operation) }

        let dialects = Self.pairs(after: "dialect u8 (")
        #expect(dialects.count == RemoteDialect.allCases.count, "\(dialects)")
        for (code, name) in dialects { #expect(RemoteDialect(code: UInt8(code))?.rawValue == name, "dialect \(code)") }

        let bits = Self.pairs(after: "capabilities u8 (bit ")
        #expect(bits.count == RemoteCapabilities.named.count, "\(bits)")
        for (bit, name) in bits {
            #expect(
                RemoteCapabilities.named.first { $0.name == name }?.capability.rawValue == UInt8(1) << UInt8(bit),
                "capability bit \(bit)")
        }
    }
}
