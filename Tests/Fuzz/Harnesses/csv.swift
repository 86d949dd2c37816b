// libFuzzer harness: the CSV reader and the Daylio and CSV-export importers. Input: the file's bytes.
import MoodLedger

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCSV(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    var options = ImportOptions()
    options.moodMap = ["great": 5, "fine": 3]
    _ = try? Importer.plan(text, format: .daylio, options: options)
    _ = try? Importer.plan(text, format: .csv, options: options)
    _ = try? CSVReader.records(text)
    // The streaming reader, in reads of 7 bytes (records and quotes straddle them).
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for format in [ImportFormat.daylio, .csv] {
        var position = 0
        guard
            var stream = try? ImportStream.open(
                format: format, options: options,
                read: { buffer in
                    let count = min(7, buffer.count, bytes.count - position)
                    for i in 0..<count { buffer[i] = bytes[position + i] }
                    position += count
                    return count
                })
        else { continue }
        while let row = try? stream.next() { _ = row }
    }
    return 0
}
