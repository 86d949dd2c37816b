// libFuzzer harness: the HTTP/1.1 request parser. Input: bytes as a client might send them on one connection.
// Every input is answered or refused (never a trap); a request the parser frames from the whole input frames the
// same from any longer buffer, and every shorter prefix of it only asks for more bytes (split reads parse the same).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    let parser = HTTPParser(limits: HTTPParser.Limits())
    guard case .request(let request, let consumed) = parser.parse(bytes) else { return 0 }
    precondition(consumed > 0 && consumed <= size, "consumed \(consumed) of \(size)")
    // Every cut for short requests; 256 spread over a long one (each parse reads from the start).
    let cuts = consumed <= 2_048 ? Array(0..<consumed) : (0..<256).map { $0 * consumed / 256 }
    for cut in cuts {
        switch parser.parse(UnsafeRawBufferPointer(rebasing: bytes[0..<cut])) {
        case .needMore: break
        case .request: preconditionFailure("a request framed from \(cut) of its \(consumed) bytes")
        case .failure(let response): preconditionFailure("a prefix of \(cut) bytes refused (\(response.status))")
        }
    }
    if case .request(let again, let used) = parser.parse(UnsafeRawBufferPointer(rebasing: bytes[0..<consumed])) {
        precondition(
            used == consumed && again.method == request.method && again.path == request.path
                && again.query == request.query && again.body == request.body, "the request alone frames differently")
    } else {
        preconditionFailure("the request alone does not frame")
    }
    return 0
}
