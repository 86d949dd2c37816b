/// Decodes a chunked body (RFC 9112 §7.1): `size [BWS ";" ext] CRLF data CRLF … 0 CRLF [trailers] CRLF`.
///
/// Resumable: each ``advance(_:)`` goes as far as the bytes allow and keeps its place, so a body read in many pieces
/// is decoded once (the buffer may grow between calls; what was decoded must stay where it was). Trailer fields are
/// read past and dropped.
public struct HTTPChunkedDecoder: Sendable {
    /// The body decoded so far (all of it once ``advance(_:)`` returned `true`).
    public private(set) var body: [UInt8] = []
    /// Where the next unread byte is in the buffer; after the end, the first byte after the message.
    public private(set) var position: Int
    private var inTrailers = false
    private var trailersFrom = 0
    /// The most body bytes taken (413 beyond).
    public let maximumBody: Int
    /// The most trailer bytes taken (431 beyond).
    public let maximumTrailers: Int

    /// A decoder whose body starts at `position` of the buffer.
    public init(from position: Int, maximumBody: Int, maximumTrailers: Int = 16 << 10) {
        self.position = position
        self.maximumBody = maximumBody
        self.maximumTrailers = maximumTrailers
    }

    /// Decodes what `buffer` holds from ``position``: `true` once the body and its trailers are whole, `false` when
    /// more bytes are needed.
    /// - Throws: ``HTTPWireError``: 400 for a malformed size line or chunk, 413 for a body over ``maximumBody``, 431
    ///   for trailers over ``maximumTrailers``.
    public mutating func advance(_ buffer: UnsafeRawBufferPointer) throws(HTTPWireError) -> Bool {
        while true {
            if inTrailers {
                guard let end = HTTPFields.lineEnd(buffer, from: position, limit: maximumTrailers + 2) else {
                    if buffer.count - trailersFrom > maximumTrailers { throw HTTPWireError(431, "trailers too large") }
                    return false
                }
                if end - trailersFrom > maximumTrailers { throw HTTPWireError(431, "trailers too large") }
                let empty = end == position
                position = end + 2
                if empty { return true }
                continue
            }
            guard let lineEnd = HTTPFields.lineEnd(buffer, from: position, limit: 1024) else {
                if buffer.count - position > 1024 { throw HTTPWireError(400, "chunk size line too long") }
                return false
            }
            let line = UnsafeRawBufferPointer(rebasing: buffer[position..<lineEnd])
            var sizeBytes = line.prefix { $0 != UInt8(ascii: ";") }
            if sizeBytes.count < line.count {
                // Whitespace may stand before a chunk extension (BWS), never elsewhere.
                while let last = sizeBytes.last, last == 0x20 || last == 0x09 { sizeBytes = sizeBytes.dropLast() }
            }
            while sizeBytes.count > 1, sizeBytes.first == UInt8(ascii: "0") { sizeBytes = sizeBytes.dropFirst() }
            guard !sizeBytes.isEmpty, sizeBytes.count <= 15 else { throw HTTPWireError(400, "malformed chunk size") }
            var size = 0
            for byte in sizeBytes {
                guard let digit = HTTPFields.hexValue(byte) else { throw HTTPWireError(400, "malformed chunk size") }
                size = size << 4 | Int(digit)
            }
            if size == 0 {
                position = lineEnd + 2
                inTrailers = true
                trailersFrom = position
                continue
            }
            if size > maximumBody - body.count {
                throw HTTPWireError(413, "body larger than \(maximumBody) bytes")
            }
            let dataStart = lineEnd + 2
            guard buffer.count - dataStart >= size + 2 else { return false }
            guard buffer[dataStart + size] == 13, buffer[dataStart + size + 1] == 10 else {
                throw HTTPWireError(400, "chunk data not followed by CRLF")
            }
            body.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[dataStart..<(dataStart + size)]))
            position = dataStart + size + 2
        }
    }
}
