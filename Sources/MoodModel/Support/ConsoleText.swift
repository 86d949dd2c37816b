/// Text from elsewhere (a server's message or id, a file's field) made safe for a terminal: control characters are
/// shown as escapes, never written raw, so nothing a remote sends can retitle a window, clear a screen or move the
/// cursor. JSON output needs none of this: RFC 8259 escapes control characters already.
public enum ConsoleText {
    /// Whether a scalar is a control character: C0 (U+0000–U+001F), DEL (U+007F) or C1 (U+0080–U+009F).
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// `text` with every control character written as `\u{XX}` (hex); line feeds and tabs kept when
    /// `keepingLineBreaks` (a multi-line display of text that is already safe line by line).
    /// - Parameters:
    ///   - text: the text.
    ///   - keepingLineBreaks: keep `\n` and `\t` as they are.
    public static func escaped(_ text: String, keepingLineBreaks: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar), !(keepingLineBreaks && (scalar == "\n" || scalar == "\t")) {
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
