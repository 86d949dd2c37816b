import Foundation
import TestSupport
import Testing

@testable import MoodLedgerServer

/// The PostgreSQL client's pieces that need no server: SCRAM-SHA-256 and PBKDF2 against their RFCs' vectors, and the
/// connection strings in libpq's two forms.
@Suite struct PostgresWireTests {
    @Test func pbkdf2MatchesRFC7914() {
        // RFC 7914 §11: PBKDF2-HMAC-SHA256, P = "passwd", S = "salt", c = 1 (the first 32 bytes of dkLen = 64).
        let key = SCRAM.pbkdf2(password: Array("passwd".utf8), salt: Array("salt".utf8), iterations: 1)
        #expect(ByteText.hex(key) == "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc")
        // 4,096 iterations are checked through RFC 7677's SCRAM example below.
    }

    @Test func scramMatchesRFC7677() throws {
        var scram = SCRAM(password: "pencil", nonce: "rOprNGfwEbeRWgbNEkqO", user: "user")
        #expect(String(decoding: scram.clientFirst, as: UTF8.self) == "n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
        let serverFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        let final = try scram.clientFinal(serverFirst: Array(serverFirst.utf8))
        #expect(
            String(decoding: final, as: UTF8.self)
                == "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        )
        try scram.verify(serverFinal: Array("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".utf8))
        #expect(throws: PostgresError.self) {
            try scram.verify(serverFinal: Array("v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".utf8))
        }
    }

    @Test func scramRefusesAServerThatDoesNotExtendTheNonceOrAsksTooMuchWork() {
        var scram = SCRAM(password: "pencil", nonce: "abc")
        #expect(throws: PostgresError.self) { try scram.clientFinal(serverFirst: Array("r=xyz123,s=AAAA,i=4096".utf8)) }
        #expect(throws: PostgresError.self) {
            try scram.clientFinal(serverFirst: Array("r=abc123,s=AAAA,i=99999999999".utf8))
        }
        #expect(throws: PostgresError.self) { try scram.clientFinal(serverFirst: Array("r=abc123,s=,i=4096".utf8)) }
    }

    @Test func uriSettings() throws {
        let settings = try PostgresSettings.parse(
            "postgresql://ann:p%40ss@db1:5433,db2/moods?target_session_attrs=any&connect_timeout=3")
        #expect(settings.user == "ann")
        #expect(settings.password == "p@ss")
        #expect(settings.database == "moods")
        #expect(
            settings.hosts == [.init(host: "db1", port: 5433), .init(host: "db2", port: 5432)])
        #expect(settings.targetSessionAttributes == .any)
        #expect(settings.timeoutSeconds == 3)
        let socket = try PostgresSettings.parse(
            "postgres://ann@%2Fvar%2Frun%2Fpostgresql/moods", environment: ["PGPASSWORD": "env"])
        #expect(socket.hosts == [.init(host: "/var/run/postgresql", port: 5432)])
        #expect(socket.hosts[0].socketPath == "/var/run/postgresql/.s.PGSQL.5432")
        #expect(socket.password == "env")
        #expect(socket.targetSessionAttributes == .readWrite)
        let ipv6 = try PostgresSettings.parse("postgresql://u@[::1]:6000/d")
        #expect(ipv6.hosts == [.init(host: "::1", port: 6000)])
    }

    @Test func keywordSettings() throws {
        let settings = try PostgresSettings.parse(
            "host=a,b port=5432,5433 user=u dbname=d password='it\\'s' target_session_attrs=read-write")
        #expect(settings.hosts == [.init(host: "a", port: 5432), .init(host: "b", port: 5433)])
        #expect(settings.password == "it's")
        #expect(settings.database == "d")
    }

    @Test func settingsThatCannotBeHonouredAreRefused() {
        for text in [
            "postgresql://u@h/d?sslmode=require", "postgresql://u@h/d?sslmode=verify-full", "host=h port=0",
            "host=a,b port=1,2,3", "postgresql://u@h/d?target_session_attrs=primary", "host=h user",
            "postgresql://u@h/d?x=%zz"
        ] {
            #expect(throws: PostgresError.self, "\(text)") { try PostgresSettings.parse(text) }
        }
        do {
            _ = try PostgresSettings.parse("postgresql://u@h/d?sslmode=require")
        } catch {
            #expect(error.kind == .configuration)
            #expect(error.message.contains("TLS"))
        }
    }
}
