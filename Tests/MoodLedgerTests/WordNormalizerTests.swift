import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

@Suite("Word keys and custom words read from ASCII bytes")
struct WordNormalizerTests {
    @Test(
        "key and custom of seeded ASCII texts (case, white space runs at the ends and inside, _ and -) equal the Unicode spelling's"
    )
    func asciiAgreesWithUnicode() {
        var random = SeededRandom()
        let pieces = ["a", "Z", "work", "Current", " ", "  ", "\t", "\n", "\u{0B}", "\u{0C}", "\r", "_", "-", "x1", "ß"]
        for _ in 0..<5_000 {
            let text = (0..<Int.random(in: 0...6, using: &random)).map { _ in pieces.randomElement(using: &random)! }
                .joined()
            let key = String(
                text.lowercased().unicodeScalars.filter { !$0.properties.isWhitespace && $0 != "_" && $0 != "-" })
            let custom = WordNormalizer.nfc(
                text.lowercased().split(whereSeparator: { $0.isWhitespace }).joined(separator: " "))
            #expect(WordNormalizer.key(text) == key, "\(Array(text.utf8))")
            #expect(WordNormalizer.custom(text) == custom, "\(Array(text.utf8))")
        }
    }
}
