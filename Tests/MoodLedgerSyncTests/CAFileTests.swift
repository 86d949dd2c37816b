import Foundation
import TestSupport
import Testing

@testable import MoodLedgerSync

@Suite("A CA file's certificates")
struct CAFileTests {
    @Test("Every certificate of a PEM file is read, in order; DER as it is; an unreadable block or file refused")
    func certificates() throws {
        let dir = TemporaryDirectory("ca-file")
        let first: [UInt8] = [0x30, 0x82, 0x01, 0x02, 0xAA]
        let second: [UInt8] = [0x30, 0x82, 0x03, 0x04, 0xBB, 0xCC]
        func pem(_ der: [UInt8]) -> String {
            "-----BEGIN CERTIFICATE-----\n\(Data(der).base64EncodedString())\n-----END CERTIFICATE-----\n"
        }
        let bundle = dir.sub("bundle.pem")
        try ("# a comment\n" + pem(first) + "\n" + pem(second)).write(toFile: bundle, atomically: true, encoding: .utf8)
        #expect(try URLSessionTransport.certificates(at: bundle) == [Data(first), Data(second)])
        let der = dir.sub("ca.der")
        try Data(second).write(to: URL(fileURLWithPath: der))
        #expect(try URLSessionTransport.certificates(at: der) == [Data(second)])
        let broken = dir.sub("broken.pem")
        try (pem(first) + "-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----\n")
            .write(toFile: broken, atomically: true, encoding: .utf8)
        #expect {
            try URLSessionTransport.certificates(at: broken)
        } throws: { error in
            (error as? SyncError)?.message.contains("certificate 2 of") == true
        }
        let text = dir.sub("notes.txt")
        try "not a certificate".write(toFile: text, atomically: true, encoding: .utf8)
        #expect(throws: SyncError.self) { try URLSessionTransport.certificates(at: text) }
        #expect(throws: SyncError.self) { try URLSessionTransport.certificates(at: dir.sub("missing.pem")) }
    }
}
