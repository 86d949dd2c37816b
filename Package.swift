// swift-tools-version:6.0
import PackageDescription

// MoodLedger has no package dependencies: toolchain only (the user's requirement).
let package = Package(
    name: "MoodLedger",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "EventLog", targets: ["EventLog"]),
        .library(name: "MoodLedger", targets: ["MoodLedger"]),
        .library(name: "MoodLedgerServer", targets: ["MoodLedgerServer"]),
        .library(name: "MoodLedgerSync", targets: ["MoodLedgerSync"]),
        .executable(name: "moodledger", targets: ["moodledger"]),
        .executable(name: "moodledger-bench", targets: ["moodledger-bench"]),
    ],
    targets: [
        // bytes → records: framing, checksums, fsync, recovery. Knows nothing of moods.
        .target(name: "EventLog", dependencies: ["CPlatform"]),
        // The CPU's CRC-32C instruction, a SIGBUS guard for mapped snapshots, a prefetch hint: what Swift cannot say itself.
        .target(name: "CPlatform"),
        // records → events → projections → queries.
        .target(name: "MoodLedger", dependencies: ["EventLog", "CPlatform"]),
        // The reference backend: the seed API over one ledger per user, HTTP/1.1 over POSIX sockets.
        .target(name: "MoodLedgerServer", dependencies: ["MoodLedger", "EventLog"]),
        // The sync client: delivers the outbox to a backend over HTTP/1.1 and pulls its changes (Specs/sync.md).
        .target(name: "MoodLedgerSync", dependencies: ["MoodLedger", "EventLog"]),
        // The command-line tool as a library, so tests run every command in-process.
        .target(name: "MoodLedgerCLI", dependencies: ["MoodLedger", "EventLog", "MoodLedgerServer", "MoodLedgerSync"]),
        .executableTarget(name: "moodledger", dependencies: ["MoodLedgerCLI"]),
        .executableTarget(name: "moodledger-bench", dependencies: ["MoodLedger", "EventLog", "MoodLedgerServer", "MoodLedgerSync"]),
        // A child process for the crash tests: appends in a loop and prints each acknowledged seq.
        .executableTarget(name: "eventlog-crash-child", dependencies: ["EventLog"]),
        // Helpers shared by the test targets: temporary directories, seeded randomness, fault injection.
        .target(name: "TestSupport", dependencies: ["EventLog", "MoodLedger"], path: "Tests/TestSupport"),
        .testTarget(name: "EventLogTests", dependencies: ["EventLog", "TestSupport", "eventlog-crash-child"]),
        .testTarget(name: "MoodLedgerTests", dependencies: ["MoodLedger", "TestSupport"]),
        .testTarget(name: "MoodLedgerServerTests", dependencies: ["MoodLedgerServer", "MoodLedgerSync", "MoodLedger", "TestSupport", "moodledger"]),
        .testTarget(name: "MoodLedgerSyncTests", dependencies: ["MoodLedgerSync", "MoodLedgerServer", "MoodLedgerCLI", "MoodLedger",
                                                               "TestSupport", "moodledger"]),
        .testTarget(name: "MoodLedgerCLITests", dependencies: ["MoodLedgerCLI", "MoodLedger", "TestSupport", "moodledger"],
                    exclude: ["Fixtures", "Golden"]),
    ]
)
