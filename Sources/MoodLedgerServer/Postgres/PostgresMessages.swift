/// A parameter of a statement, sent in binary with its type named (so a statement needs no casts).
public enum PostgresValue: Sendable, Equatable {
    case null
    case int64(Int64)
    case int32(Int32)
    case bool(Bool)
    case bytes([UInt8])
    case text(String)
    /// A one-dimensional `bytea[]` without NULLs.
    case byteaArray([[UInt8]])

    /// The type's OID (`pg_type`): int8, int4, bool, bytea, text; 0 (the server infers it) for a null.
    var typeOID: UInt32 {
        switch self {
        case .null: 0
        case .int64: 20
        case .int32: 23
        case .bool: 16
        case .bytes: 17
        case .text: 25
        case .byteaArray: 1001
        }
    }

    /// The binary form (`nil` for SQL NULL).
    var binary: [UInt8]? {
        switch self {
        case .null: nil
        case .int64(let value): withUnsafeBytes(of: value.bigEndian, Array.init)
        case .int32(let value): withUnsafeBytes(of: value.bigEndian, Array.init)
        case .bool(let value): [value ? 1 : 0]
        case .bytes(let value): value
        case .text(let value): Array(value.utf8)
        case .byteaArray(let items):
            // PostgreSQL's binary array: dimensions, has-nulls, element type, then length and lower bound per
            // dimension, then each element's length and bytes.
            {
                var writer = PostgresWriter()
                writer.int32(Int32(1))
                writer.int32(Int32(0))
                writer.int32(UInt32(17))
                writer.int32(Int32(items.count))
                writer.int32(Int32(1))
                for item in items {
                    writer.int32(Int32(item.count))
                    writer.raw(item)
                }
                return writer.bytes
            }()
        }
    }
}

/// One row of a result, its columns in binary form (`nil`: NULL).
public struct PostgresRow: Sendable {
    /// The columns' bytes.
    public var columns: [[UInt8]?]

    /// A column as an integer: bool (0 or 1), int2, int4 or int8 by its width.
    /// - Throws: ``PostgresError`` `postgres_protocol` for NULL or another width.
    public func int(_ index: Int) throws(PostgresError) -> Int64 {
        guard index < columns.count, let bytes = columns[index] else { throw Self.missing(index) }
        if bytes.count == 1 { return bytes[0] == 0 ? 0 : 1 }
        guard [2, 4, 8].contains(bytes.count) else {
            throw PostgresError(.protocolViolation, "column \(index) is \(bytes.count) bytes, not an integer")
        }
        var value: Int64 = bytes[0] & 0x80 != 0 ? -1 : 0
        for byte in bytes { value = value << 8 | Int64(byte) }
        return value
    }

    /// A column as bytes (bytea, or text's UTF-8).
    /// - Throws: ``PostgresError`` `postgres_protocol` for NULL.
    public func bytes(_ index: Int) throws(PostgresError) -> [UInt8] {
        guard index < columns.count, let bytes = columns[index] else { throw Self.missing(index) }
        return bytes
    }

    /// A column as text.
    /// - Throws: ``PostgresError`` `postgres_protocol` for NULL or bytes that are not UTF-8.
    public func text(_ index: Int) throws(PostgresError) -> String {
        guard let text = String(validating: try bytes(index), as: UTF8.self) else {
            throw PostgresError(.protocolViolation, "column \(index) is not UTF-8")
        }
        return text
    }

    /// Whether a column is NULL.
    public func isNull(_ index: Int) -> Bool { index >= columns.count || columns[index] == nil }

    private static func missing(_ index: Int) -> PostgresError {
        PostgresError(.protocolViolation, "column \(index) is missing or NULL")
    }
}

/// What one statement returned: its rows and the count its command tag reports (rows inserted, updated…).
public struct PostgresResult: Sendable {
    /// The rows, in order.
    public var rows: [PostgresRow] = []
    /// The command tag's last number (`INSERT 0 3` → 3), 0 when it has none.
    public var affected = 0
}

/// Frontend messages, framed (protocol 3.0, `Specs/server.md`, *PostgreSQL*): a type byte, then a length that counts
/// itself, then the body.
struct PostgresWriter {
    var bytes: [UInt8] = []

    /// A message of `type` (nil: the startup message, which has none) whose body `body` writes.
    mutating func message(_ type: UInt8?, _ body: (inout PostgresWriter) -> Void) {
        if let type { bytes.append(type) }
        let start = bytes.count
        int32(Int32(0))
        body(&self)
        let length = UInt32(bytes.count - start)
        withUnsafeBytes(of: length.bigEndian) { bytes.replaceSubrange(start..<(start + 4), with: $0) }
    }

    mutating func int32(_ value: Int32) { withUnsafeBytes(of: value.bigEndian) { bytes += $0 } }
    mutating func int32(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { bytes += $0 } }
    mutating func int16(_ value: Int16) { withUnsafeBytes(of: value.bigEndian) { bytes += $0 } }
    mutating func cString(_ text: String) {
        bytes += text.utf8
        bytes.append(0)
    }
    mutating func raw(_ data: [UInt8]) { bytes += data }
}

/// A backend message's body, read with every length checked against what is there.
struct PostgresReader {
    let body: [UInt8]
    private(set) var offset = 0

    init(_ body: [UInt8]) { self.body = body }

    var remaining: Int { body.count - offset }

    mutating func byte() throws(PostgresError) -> UInt8 {
        guard remaining >= 1 else { throw Self.short }
        offset += 1
        return body[offset - 1]
    }

    mutating func int16() throws(PostgresError) -> Int16 {
        guard remaining >= 2 else { throw Self.short }
        defer { offset += 2 }
        return Int16(bitPattern: UInt16(body[offset]) << 8 | UInt16(body[offset + 1]))
    }

    mutating func int32() throws(PostgresError) -> Int32 {
        guard remaining >= 4 else { throw Self.short }
        defer { offset += 4 }
        var value: UInt32 = 0
        for index in offset..<(offset + 4) { value = value << 8 | UInt32(body[index]) }
        return Int32(bitPattern: value)
    }

    mutating func bytes(_ count: Int) throws(PostgresError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw Self.short }
        defer { offset += count }
        return Array(body[offset..<(offset + count)])
    }

    mutating func cString() throws(PostgresError) -> String {
        guard let end = body[offset...].firstIndex(of: 0) else { throw Self.short }
        defer { offset = end + 1 }
        return String(decoding: body[offset..<end], as: UTF8.self)
    }

    mutating func rest() -> [UInt8] {
        defer { offset = body.count }
        return Array(body[offset...])
    }

    private static let short = PostgresError(.protocolViolation, "a message from the server is shorter than it says")

    /// An `ErrorResponse`'s fields as an error: the SQLSTATE and the primary message (the detail and hint are left
    /// out: they may quote a row's values).
    static func serverError(_ body: [UInt8]) -> PostgresError {
        var reader = PostgresReader(body)
        var fields: [UInt8: String] = [:]
        while let type = try? reader.byte(), type != 0, let value = try? reader.cString() { fields[type] = value }
        let severity = fields[UInt8(ascii: "V")] ?? fields[UInt8(ascii: "S")] ?? "ERROR"
        return PostgresError(
            .server, "\(severity): \(fields[UInt8(ascii: "M")] ?? "no message")", sqlState: fields[UInt8(ascii: "C")])
    }
}
