// swift-tools-version:6.0
import PackageDescription

// MoodLedger has no package dependencies: toolchain only (the user's requirement).
// Linux is the platform it is built and tested on; every module type-checks for arm64-apple-ios18.0 against a real
// iOS SDK (README, *Apple platforms*, says how and what that proves).

/// Linker flags for a binary with the Swift runtime and Foundation inside (see the `moodledger` target).
let staticFoundation =
    ["-static-stdlib", "-Xlinker", "--start-group"]
    + [
        "FoundationNetworking", "_CFURLSessionInterface", "FoundationEssentials", "FoundationInternationalization",
        "Foundation", "_FoundationICU", "_FoundationCShims", "_FoundationCollections", "CoreFoundation",
        "BlocksRuntime", "swiftDispatch", "dispatch"
    ]
    .flatMap { ["-Xlinker", "-l\($0)"] }
    // FoundationNetworking speaks HTTPS through libcurl, which is not linked: the binary carries trampolines that open
    // Debian's libcurl4 when an `https://` sync first calls it (CLazyCurl), so no other command loads it.
    + ["-Xlinker", "--end-group", "-Xlinker", "-lstdc++"]
let package = Package(
    name: "MoodLedger",
    // Linux is where it is built and tested; the library type-checks for iOS 18 (README, *Apple platforms*).
    platforms: [.iOS(.v18), .macOS(.v15), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Platform", targets: ["Platform"]),
        .library(name: "EventLogFormat", targets: ["EventLogFormat"]),
        .library(name: "EventLog", targets: ["EventLog"]),
        .library(name: "MoodModel", targets: ["MoodModel"]),
        .library(name: "MoodLedger", targets: ["MoodLedger"]),
        .library(name: "MoodInterchange", targets: ["MoodInterchange"]),
        .library(name: "MoodLedgerServer", targets: ["MoodLedgerServer"]),
        .library(name: "MoodLedgerSync", targets: ["MoodLedgerSync"]),
        .executable(name: "moodledger", targets: ["moodledger"]),
        .executable(name: "moodledger-bench", targets: ["moodledger-bench"])
    ],
    targets: [
        // The one place that calls the operating system: files, mappings, sockets, processes, signals, clocks, libm.
        // Every call retries EINTR and turns errno into a typed error; no other module imports Glibc or Darwin.
        .target(name: "Platform", dependencies: ["CPlatform"]),
        // The log's byte format (Specs/log-format.md): constants, header and record codecs, CRC-32C, the civil
        // calendar. Pure: no I/O, shared by the log and the model.
        .target(name: "EventLogFormat", dependencies: ["CPlatform"]),
        // bytes → records: framing, checksums, fsync, recovery. Knows nothing of moods.
        .target(name: "EventLog", dependencies: ["EventLogFormat", "Platform", "CPlatform"]),
        // The CPU's CRC-32C instruction, a SIGBUS guard for mapped snapshots, a prefetch hint, malloc_trim: what Swift
        // cannot say itself.
        .target(name: "CPlatform"),
        // libcurl's functions as trampolines that open libcurl on first use: the `moodledger` binary starts without it.
        .target(name: "CLazyCurl"),
        // The model: domain values, events and their codec, the JSON and ISO 8601 wire helpers. Pure: no I/O, no
        // ledger (it sees the log's byte format, not the log).
        .target(name: "MoodModel", dependencies: ["EventLogFormat"]),
        // records → events → projections → snapshots → queries: the ledger (re-exports MoodModel).
        .target(name: "MoodLedger", dependencies: ["MoodModel", "EventLogFormat", "Platform", "EventLog", "CPlatform"]),
        // The edges that read and write other formats: importers, exporters, the API record, HealthKit. Depends on
        // the ledger; the ledger never sees it.
        .target(name: "MoodInterchange", dependencies: ["MoodLedger", "MoodModel", "Platform"]),
        // HTTP/1.1's message rules, one codec for both sides: field lines, framing, chunking, the Host authority. Pure:
        // the server frames requests and the sync client frames answers with the same functions.
        .target(name: "HTTPWire"),
        // The reference backend: the seed API over one ledger per user, HTTP/1.1 over POSIX sockets.
        .target(
            name: "MoodLedgerServer",
            dependencies: ["Platform", "MoodLedger", "MoodInterchange", "EventLog", "HTTPWire"]),
        // The sync client: delivers the outbox to a backend over HTTP/1.1 and pulls its changes (Specs/sync.md).
        .target(name: "MoodLedgerSync", dependencies: ["Platform", "MoodLedger", "MoodInterchange", "HTTPWire"]),
        // The command-line tool as a library, so tests run every command in-process.
        .target(
            name: "MoodLedgerCLI",
            dependencies: [
                "Platform", "MoodLedger", "MoodInterchange", "EventLog", "MoodLedgerServer", "MoodLedgerSync"
            ]),
        // A release build links the Swift runtime and Foundation into the binary (toolchain libraries, no package
        // dependency): every command is a fresh process, and resolving shared libraries' symbols would cost each
        // one several milliseconds. The toolchain's own list of static libraries leaves some of Foundation's
        // unresolved, hence the group. Debug builds stay dynamic: test bundles link this target's module, and the
        // Testing library has no static build.
        .executableTarget(
            name: "moodledger", dependencies: ["MoodLedgerCLI", "CLazyCurl"],
            linkerSettings: [.unsafeFlags(staticFoundation, .when(platforms: [.linux], configuration: .release))]),
        .executableTarget(
            name: "moodledger-bench",
            dependencies: [
                "Platform", "MoodLedger", "MoodInterchange", "EventLog", "MoodLedgerServer", "MoodLedgerSync"
            ]),
        // A child process for the crash tests: appends in a loop and prints each acknowledged seq.
        .executableTarget(name: "eventlog-crash-child", dependencies: ["Platform", "EventLog"]),
        // Helpers shared by the test targets: temporary directories, seeded randomness, fault injection.
        .target(
            name: "TestSupport",
            dependencies: ["Platform", "EventLog", "MoodLedger", "MoodInterchange", "MoodLedgerServer"],
            path: "Tests/TestSupport"),
        .testTarget(
            name: "EventLogTests",
            dependencies: ["Platform", "EventLogFormat", "EventLog", "TestSupport", "eventlog-crash-child"]),
        .testTarget(
            name: "MoodLedgerTests",
            dependencies: ["Platform", "EventLogFormat", "MoodModel", "MoodLedger", "MoodInterchange", "TestSupport"]),
        .testTarget(
            name: "MoodLedgerServerTests",
            dependencies: [
                "Platform", "MoodLedgerServer", "MoodLedgerSync", "MoodLedger", "MoodInterchange", "TestSupport",
                "moodledger"
            ]),
        .testTarget(
            name: "MoodLedgerSyncTests",
            dependencies: [
                "Platform", "MoodLedgerSync", "MoodLedgerServer", "MoodLedgerCLI", "MoodLedger", "MoodInterchange",
                "HTTPWire", "TestSupport", "moodledger"
            ]),
        .testTarget(
            name: "MoodLedgerCLITests",
            dependencies: ["Platform", "MoodLedgerCLI", "MoodLedger", "MoodInterchange", "TestSupport", "moodledger"],
            exclude: ["Fixtures", "Golden"])
    ]
)
