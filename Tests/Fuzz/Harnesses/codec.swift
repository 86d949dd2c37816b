// libFuzzer harness: the event codec (built into the MoodModel module by Tests/Fuzz/run.sh).
// Input: 2 bytes of record type (little-endian), then the payload. A decoded event re-encodes to an event that
// decodes to the same thing.
import EventLogFormat

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCodec(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let type = UInt16(data[0]) | UInt16(data[1]) << 8
    let payload = UnsafeRawBufferPointer(start: data + 2, count: size - 2)
    guard let (command, event) = try? EventCodec.decode(type: type, payload: payload) else { return 0 }
    let again = EventCodec.encode(event, commandID: command)
    guard let (command2, event2) = try? again.withUnsafeBytes({ try EventCodec.decode(type: type, payload: $0) }),
        command2 == command, event2 == event
    else { fatalError("decode ∘ encode is not the identity") }
    return 0
}
