// libFuzzer harness: the CSV reader and the Daylio and CSV-export importers. Input: the file's bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCSV(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    var options = ImportOptions()
    options.moodMap = ["great": 5, "fine": 3]
    _ = try? Importer.plan(text, format: .daylio, options: options)
    _ = try? Importer.plan(text, format: .csv, options: options)
    _ = try? CSVReader.records(text)
    return 0
}
