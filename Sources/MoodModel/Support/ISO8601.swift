/// ISO 8601 instants without Foundation's formatters: exact, fast and locale-free.
package enum ISO8601 {
    package static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    /// Formats an instant in a UTC offset: `2026-03-01T08:15:00+01:00`, with `.SSS` when milliseconds are non-zero
    /// and `Z` for offset 0.
    package static func format(milliseconds: Int64, offsetMinutes: Int) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(29)
        write(milliseconds: milliseconds, offsetMinutes: offsetMinutes, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// ``format(milliseconds:offsetMinutes:)`` appended as UTF-8 bytes (no intermediate strings: responses use it).
    package static func write(milliseconds: Int64, offsetMinutes: Int, into out: inout [UInt8]) {
        let local = milliseconds + Int64(offsetMinutes) * 60_000
        let days = local.floorDivided(by: 86_400_000)
        let msOfDay = Int(local - days * 86_400_000)
        LocalDate(daysSinceEpoch: Int32(days)).write(into: &out)
        out.append(UInt8(ascii: "T"))
        digits(msOfDay / 3_600_000, 2, &out)
        out.append(UInt8(ascii: ":"))
        digits(msOfDay / 60_000 % 60, 2, &out)
        out.append(UInt8(ascii: ":"))
        digits(msOfDay / 1000 % 60, 2, &out)
        if msOfDay % 1000 != 0 {
            out.append(UInt8(ascii: "."))
            digits(msOfDay % 1000, 3, &out)
        }
        if offsetMinutes == 0 {
            out.append(UInt8(ascii: "Z"))
            return
        }
        out.append(offsetMinutes < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
        let magnitude = abs(offsetMinutes)
        digits(magnitude / 60, 2, &out)
        out.append(UInt8(ascii: ":"))
        digits(magnitude % 60, 2, &out)
    }

    /// A non-negative number in at least `width` digits (zero-padded).
    static func digits(_ value: Int, _ width: Int, _ out: inout [UInt8]) {
        if width == 2, (0..<100).contains(value) {
            out.append(UInt8(48 + value / 10))
            out.append(UInt8(48 + value % 10))
            return
        }
        guard value >= 0 else {
            out += pad(value, width).utf8
            return
        }
        var scratch:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &scratch) { buffer in
            var n = value
            var count = 0
            repeat {
                buffer[19 - count] = UInt8(48 + n % 10)
                n /= 10
                count += 1
            } while n > 0
            while count < width && count < 20 {
                buffer[19 - count] = 48
                count += 1
            }
            out += UnsafeRawBufferPointer(rebasing: buffer[(20 - count)...])
        }
    }

    /// Parses `yyyy-MM-ddTHH:mm[:ss[.fraction]](Z|±HH:MM|±HHMM)`; a space may replace `T`. Fractions beyond
    /// milliseconds are truncated.
    /// - Returns: the instant and the offset it was written in, or `nil` if malformed or impossible.
    package static func parse(_ text: String) -> LoggedAt? {
        let chars = Array(text.utf8)
        guard chars.count >= 16 else { return nil }
        func number(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= chars.count else { return nil }
            var value = 0
            for c in chars[from..<(from + count)] {
                guard c >= 48 && c <= 57 else { return nil }
                value = value * 10 + Int(c - 48)
            }
            return value
        }
        guard let year = number(0, 4), chars[4] == 45, let month = number(5, 2), chars[7] == 45,
            let day = number(8, 2), chars[10] == 84 || chars[10] == 116 || chars[10] == 32,
            let hour = number(11, 2), chars[13] == 58, let minute = number(14, 2),
            let date = LocalDate(year: year, month: month, day: day), hour < 24, minute < 60
        else { return nil }
        var index = 16
        var second = 0
        var millis = 0
        if index < chars.count, chars[index] == 58 {
            guard let s = number(index + 1, 2), s < 60 else { return nil }
            second = s
            index += 3
            if index < chars.count, chars[index] == 46 || chars[index] == 44 {
                index += 1
                var digits = 0
                while index < chars.count, chars[index] >= 48, chars[index] <= 57 {
                    if digits < 3 { millis = millis * 10 + Int(chars[index] - 48) }
                    digits += 1
                    index += 1
                }
                guard digits > 0 else { return nil }
                if digits < 3 { for _ in digits..<3 { millis *= 10 } }
            }
        }
        var offset = 0
        guard index < chars.count else { return nil }
        if chars[index] == 90 || chars[index] == 122 {
            index += 1
        } else if chars[index] == 43 || chars[index] == 45 {
            let sign = chars[index] == 45 ? -1 : 1
            guard let h = number(index + 1, 2) else { return nil }
            var m = 0
            if index + 3 < chars.count, chars[index + 3] == 58 {
                guard let mm = number(index + 4, 2) else { return nil }
                m = mm
                index += 6
            } else if let mm = number(index + 3, 2) {
                m = mm
                index += 5
            } else {
                index += 3
            }
            guard h <= 14, m < 60 else { return nil }
            offset = sign * (h * 60 + m)
        } else {
            return nil
        }
        guard index == chars.count else { return nil }
        let localMs = date.utcMidnightMilliseconds + Int64(((hour * 60 + minute) * 60 + second) * 1000 + millis)
        return LoggedAt(milliseconds: localMs - Int64(offset) * 60_000, utcOffsetMinutes: offset)
    }
}
