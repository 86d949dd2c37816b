// libFuzzer harness: the JSON parser and every JSON importer. Input: the file's bytes.
import MoodLedger

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = try? JSONParser.parse(text)
    for format in [ImportFormat.progress, .legacyMood, .moodAPI, .healthkit] {
        _ = try? Importer.plan(text, format: format, options: ImportOptions())
    }
    return 0
}
