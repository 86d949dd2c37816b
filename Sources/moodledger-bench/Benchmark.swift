import EventLog
import Foundation
import MoodLedger
import Platform

/// The measures of `Specs/benchmark.md`, in order.
struct Benchmark {
    let events: Int
    let directory: String
    let io = SystemIO()
    var results: [(String, JSONValue)] = []

    static func now() -> UInt64 { SystemIO.monotonicNanoseconds() }
    static func seconds(since start: UInt64) -> Double { Double(now() - start) / 1e9 }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty
            ? 0
            : sorted.count % 2 == 1
                ? sorted[sorted.count / 2]
                : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    mutating func record(_ key: String, _ value: Double, places: Int = 2) {
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        results.append((key, .double((value * scale).rounded() / scale)))
    }

    /// raw_fdatasync_p50_us: a plain 256-byte write + fdatasync loop, the physical reference.
    mutating func rawSync() throws {
        let path = directory + "/raw.bin"
        let fd = try io.open(path, .readWriteCreate)
        defer { io.close(fd) }
        let block = [UInt8](repeating: 0xAB, count: 256)
        var samples: [Double] = []
        for i in 0..<2_500 {
            let start = Self.now()
            try block.withUnsafeBytes { try io.write(fd, $0, at: Int64(i) * 256) }
            try io.syncData(fd)
            if i >= 500 { samples.append(Double(Self.now() - start) / 1000) }
        }
        record("raw_fdatasync_p50_us", Self.median(samples))
    }

    /// raw_batched_events_per_s: the generated log's own bytes written to a new file in as many writes as the
    /// load phase made batches (one per 1,000 events), each followed by `fdatasync` — what the batched appends would
    /// reach with no framing, checksums or bookkeeping. Reading the log is not timed (and streams: a 1 MiB buffer).
    mutating func rawBatched() throws {
        let source = try io.open(directory + "/ledger/" + LogFormat.logFileName, .readOnly)
        defer { io.close(source) }
        let target = try io.open(directory + "/raw-batched.bin", .readWriteCreate)
        defer { io.close(target) }
        let total = try io.size(source)
        let batches = max(1, (events + 999) / 1_000)
        let chunk = Int((total + Int64(batches) - 1) / Int64(batches))
        var buffer = [UInt8](repeating: 0, count: chunk)
        var offset: Int64 = 0
        var elapsed = 0.0
        while offset < total {
            let count = min(chunk, Int(total - offset))
            var filled = 0
            while filled < count {
                let read = try buffer.withUnsafeMutableBytes {
                    try io.read(
                        source, into: UnsafeMutableRawBufferPointer(rebasing: $0[filled..<count]),
                        at: offset + Int64(filled))
                }
                guard read > 0 else { throw BenchError(text: "the log ended early") }
                filled += read
            }
            let start = Self.now()
            try buffer.withUnsafeBytes {
                try io.write(target, UnsafeRawBufferPointer(rebasing: $0[0..<count]), at: offset)
            }
            try io.syncData(target)
            elapsed += Self.seconds(since: start)
            offset += Int64(count)
        }
        record("raw_batched_events_per_s", Double(events) / elapsed, places: 0)
        try? io.remove(directory + "/raw-batched.bin")
    }

    /// cli_list_ms and cli_peak_rss_mb: the built `moodledger list --limit 5` (beside this executable) on the
    /// generated ledger, a fresh process each time; beside sqlite3_list_ms, the `sqlite3` CLI's
    /// `ORDER BY logged_at DESC LIMIT 5` over the same entries in an indexed table. Medians of 11 runs each, the two
    /// programs alternating, so that the machine's drift within the minute weighs on both alike. A missing program
    /// is noted.
    mutating func cliMeasures(state: LedgerState) throws {
        let cli = Self.builtCLI ?? ""
        let hasCLI = Self.builtCLI != nil
        let sqlite = MeasuredChild.which("sqlite3")
        let database = directory + "/entries.sqlite"
        if let sqlite { try loadEntries(state, into: database, with: sqlite) }
        var times: [Double] = []
        var peaks: [Double] = []
        var sqliteTimes: [Double] = []
        for _ in 0..<11 {
            if hasCLI {
                let outcome = try MeasuredChild.measured(
                    cli, ["list", "--limit", "5", "--ledger", directory + "/ledger"])
                guard outcome.status == 0 else { throw BenchError(text: "moodledger list exited \(outcome.status)") }
                times.append(outcome.seconds * 1000)
                peaks.append(Double(outcome.peakResidentBytes) / 1_048_576)
            }
            if let sqlite {
                let outcome = try MeasuredChild.measured(
                    sqlite, [database, "SELECT * FROM entries ORDER BY logged_at DESC LIMIT 5;"])
                guard outcome.status == 0 else { throw BenchError(text: "sqlite3 exited \(outcome.status)") }
                sqliteTimes.append(outcome.seconds * 1000)
            }
        }
        if hasCLI {
            record("cli_list_ms", Self.median(times), places: 1)
            record("cli_peak_rss_mb", Self.median(peaks), places: 1)
        } else {
            results.append(("cli_list_ms", .string("skipped: no moodledger beside moodledger-bench")))
        }
        if sqlite != nil {
            record("sqlite3_list_ms", Self.median(sqliteTimes), places: 1)
            try? FileManager.default.removeItem(atPath: database)
        } else {
            results.append(("sqlite3_list_ms", .string("skipped: sqlite3 is not installed")))
        }
    }

    /// The same entries as CSV, imported into a table with an index on logged_at (not timed).
    private func loadEntries(_ state: LedgerState, into database: String, with sqlite: String) throws {
        let csv = directory + "/entries.csv"
        try? FileManager.default.removeItem(atPath: database)
        _ = FileManager.default.createFile(atPath: csv, contents: nil)
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: csv))
        var text: [UInt8] = []
        func field(_ value: String) -> String { "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
        for entry in state.entries.all {
            let line = [
                entry.id.description, String(entry.loggedAt.milliseconds), String(entry.loggedAt.utcOffsetMinutes),
                entry.kind.wireName, entry.valence.map { String($0) } ?? "",
                entry.labels.map(\.wireName).joined(separator: ","),
                entry.associations.map(\.wireName).joined(separator: ","), entry.notes ?? "", entry.source.rawValue,
                entry.sourceID ?? ""
            ].map(field).joined(separator: ",")
            text += line.utf8
            text.append(10)
            if text.count > 1 << 20 {
                file.write(Data(text))
                text.removeAll(keepingCapacity: true)
            }
        }
        file.write(Data(text))
        try file.close()
        defer { try? FileManager.default.removeItem(atPath: csv) }
        let schema =
            "CREATE TABLE entries (id TEXT PRIMARY KEY, logged_at INTEGER, utc_offset_minutes INTEGER, kind TEXT, "
            + "valence REAL, labels TEXT, associations TEXT, notes TEXT, source TEXT, source_id TEXT);"
        let load = try MeasuredChild.run(
            sqlite,
            [
                database, schema, ".mode csv", ".import \(csv) entries",
                "CREATE INDEX entries_logged_at ON entries(logged_at);"
            ])
        guard load.status == 0 else {
            throw BenchError(text: "sqlite3 could not import the entries (exit \(load.status))")
        }
    }

    /// durable_append_p50_us / p99: single-event appends through EventLog, each synced.
    mutating func durableAppends(sample: [PendingRecord]) throws {
        let log = try EventLog.open(directory: directory + "/durable")
        defer { log.close() }
        var samples: [Double] = []
        for i in 0..<5_500 {
            let start = Self.now()
            try log.append([sample[i % sample.count]])
            if i >= 500 { samples.append(Double(Self.now() - start) / 1000) }
        }
        record("durable_append_p50_us", Self.median(samples))
        record("durable_append_p99_us", Self.percentile(samples, 0.99))
    }

    /// Generates the workload into `ledger/events.log` in durable batches of 1,000, streaming (the records are never
    /// all in memory), with the snapshots the ledger's policy keeps (the newest 1,000 events before the end). Runs in a child process so that its
    /// memory does not count in the measured process's peak. Returns the batched throughput.
    static func generate(events: Int, directory: String) throws -> Double {
        var workload = BenchWorkload(events: events)
        let command = EntryID(high: 1, low: 1)
        let ledgerPath = directory + "/ledger"
        let split = max(0, events - 1_000)
        var elapsed = 0.0
        var produced = 0
        func appendBatches(_ log: EventLog, upTo limit: Int) throws {
            var batch: [PendingRecord] = []
            var ready: [[PendingRecord]] = []
            batch.reserveCapacity(1_000)
            func flush() throws {
                let start = now()
                for b in ready { try log.append(b) }
                elapsed += seconds(since: start)
                ready.removeAll()
            }
            while produced < limit, let (event, time) = workload.next() {
                produced += 1
                batch.append(
                    PendingRecord(
                        type: event.type.rawValue, payload: EventCodec.encode(event, commandID: command),
                        recordedAt: time * 1000))
                if batch.count == 1_000 || produced == limit {
                    ready.append(batch)
                    batch.removeAll(keepingCapacity: true)
                    if ready.count == 50 { try flush() }
                }
            }
            try flush()
        }
        // The snapshots the ledger's own policy leaves on disk: one every `snapshotInterval` events, each write
        // pruning to what the policy keeps within twice the log's bytes (`Ledger.Options.snapshotsKept`), the newest
        // placed at N − 1,000 so that a warm open replays a tail. Only the survivors are written: the pruning after
        // each write is run on estimated sizes (the log's and the first snapshot's bytes per event, measured at the
        // first write), and each real write prunes again with the real sizes.
        let policy = Ledger.Options()
        func snapshot(at boundary: Int) throws -> (log: Int64, snapshot: Int64, path: String) {
            let log = try EventLog.open(directory: ledgerPath)
            try appendBatches(log, upTo: boundary)
            log.close()
            var options = Ledger.Options()
            options.snapshotInterval = 0
            let ledger = try Ledger.open(at: ledgerPath, options: options)
            defer { ledger.close() }
            try ledger.snapshot()
            let logBytes = ledger.eventLog.endOffset
            return (logBytes, ledger.stats.bytes - logBytes, ledger.snapshotFiles.first ?? "")
        }
        let first = min(policy.snapshotInterval, split)
        if first > 0 {
            let measured = try snapshot(at: first)
            let logPerEvent = Double(measured.log) / Double(first)
            let snapshotPerEvent = Double(measured.snapshot) / Double(first)
            var present: [UInt64] = []
            for seq in stride(from: first, to: split, by: policy.snapshotInterval) + [split] {
                present = policy.snapshotsKept(
                    newestFirst: [UInt64(seq)] + present,
                    logBytes: Int64(Double(seq) * logPerEvent)
                ) { Int64(Double($0) * snapshotPerEvent) }
            }
            if !present.contains(UInt64(first)) {
                try? FileManager.default.removeItem(atPath: measured.path)
            }
            for boundary in present.reversed().map({ Int($0) }) where boundary > produced {
                _ = try snapshot(at: boundary)
            }
        }
        let tail = try EventLog.open(directory: ledgerPath)
        try appendBatches(tail, upTo: events)
        tail.close()
        return Double(events) / elapsed
    }

    /// The first records of the workload (for the single-append measure).
    static func sample(_ count: Int) -> [PendingRecord] {
        var workload = BenchWorkload(events: count)
        var records: [PendingRecord] = []
        while let (event, time) = workload.next() {
            records.append(
                PendingRecord(
                    type: event.type.rawValue, payload: EventCodec.encode(event, commandID: EntryID(high: 1, low: 1)),
                    recordedAt: time * 1000))
        }
        return records
    }

    mutating func ledgerMeasures() throws {
        let ledgerPath = directory + "/ledger"
        var cold = Ledger.Options()
        cold.useSnapshots = false
        cold.snapshotInterval = 0
        cold.readOnly = true
        var coldTimes: [Double] = []
        var fingerprint = ""
        for _ in 0..<3 {
            let start = Self.now()
            let ledger = try Ledger.open(at: ledgerPath, options: cold)
            coldTimes.append(Self.seconds(since: start))
            fingerprint = Self.fingerprint(ledger.state)
            ledger.close()
        }
        record("cold_replay_s", Self.median(coldTimes), places: 3)
        // The cold replays' own peak (`peak_rss_mb` comes after time travel, which holds a sparse snapshot's overlay).
        record("cold_replay_peak_rss_mb", Double(SystemIO.peakResidentBytes()) / 1_048_576, places: 1)

        var warm = Ledger.Options()
        warm.snapshotInterval = 0
        warm.readOnly = true
        var warmTimes: [Double] = []
        var ledger: Ledger?
        for _ in 0..<5 {
            ledger?.close()
            ledger = nil  // deallocate the previous state outside the timed region
            let start = Self.now()
            ledger = try Ledger.open(at: ledgerPath, options: warm)
            warmTimes.append(Self.seconds(since: start) * 1000)
        }
        guard let ledger else { return }
        defer { ledger.close() }
        let state = ledger.state
        guard Self.fingerprint(state) == fingerprint else {
            throw BenchError(text: "warm open differs from the cold replay")
        }
        record("warm_open_ms", Self.median(warmTimes))

        var analyticsTimes: [Double] = []
        for _ in 0..<7 {
            let start = Self.now()
            let series = state.dailySeries()
            let labels = state.labelAnalytics(limit: 10)
            let associations = state.associationAnalytics(limit: 10)
            analyticsTimes.append(Self.seconds(since: start) * 1000)
            if series.isEmpty || labels.words.isEmpty || associations.words.isEmpty {
                throw BenchError(text: "empty analytics")
            }
        }
        record("analytics_ms", Self.median(analyticsTimes), places: 3)

        var random = SplitMix64(seed: 7)
        var travelTimes: [Double] = []
        for _ in 0..<10 {
            let target = UInt64.random(in: 1...max(1, ledger.lastSeq), using: &random)
            let start = Self.now()
            let past = try ledger.state(at: .seq(target))
            travelTimes.append(Self.seconds(since: start))
            if past.seq != target { throw BenchError(text: "time travel landed at \(past.seq), not \(target)") }
        }
        record("time_travel_s", Self.median(travelTimes), places: 3)

        try cliMeasures(state: state)

        let stats = ledger.stats
        let logBytes = ledger.eventLog.endOffset
        record("bytes_per_event", Double(logBytes) / Double(events), places: 1)
        results.append(("snapshot_bytes", .int(stats.bytes - logBytes)))
    }
}

extension Benchmark {
    /// Ends a side benchmark (`--server`, `--sync`): its peak memory and the machine, then a table or one JSON object.
    mutating func printSideResults(json: Bool) {
        record("peak_rss_mb", Double(SystemIO.peakResidentBytes()) / 1_048_576, places: 1)
        results.append(("machine", .string(BenchmarkCommand.machine)))
        if json {
            print(JSONValue.object(results).serialized())
        } else {
            for (key, value) in results {
                print(key.padding(toLength: max(30, key.count + 2), withPad: " ", startingAt: 0) + value.serialized())
            }
        }
    }

    /// An entry's history (`history_ms`), then erasure (`Specs/erasure.md`): one entry of the generated ledger, then every
    /// entry with the built `moodledger erase --all` in a child process of its own, so that its peak is the
    /// command's. Runs last: it changes the ledger.
    mutating func erasure() throws {
        let ledger = try Ledger.open(at: directory + "/ledger")
        guard let victim = ledger.state.entries.ids.first else {
            ledger.close()
            return
        }
        // An entry's history, of random current entries: the records its index points to, not the log.
        var random = SplitMix64(seed: 11)
        let ids = ledger.state.entries.ids
        var historyTimes: [Double] = []
        for round in 0..<16 {
            let id = round == 0 ? victim : ids[Int.random(in: 0..<ids.count, using: &random)]
            let start = Self.now()
            let items = try ledger.history(of: id)
            historyTimes.append(Self.seconds(since: start) * 1000)
            if items.isEmpty { throw BenchError(text: "an entry without history") }
        }
        record("history_ms", Self.median(historyTimes), places: 3)
        let start = Self.now()
        let one = try ledger.erase([victim], reason: "benchmark", ignoringDestinations: true)
        record("erase_one_s", Self.seconds(since: start), places: 3)
        results.append(("erase_one_bytes_written", .int(one.bytesWritten)))
        ledger.close()
        guard let cli = Self.builtCLI else {
            results.append(("erase_all_s", .string("skipped: no moodledger beside moodledger-bench")))
            return
        }
        let outcome = try MeasuredChild.measured(
            cli,
            [
                "erase", "--all", "--include-healthkit", "--local-only", "--yes",
                "--ledger", directory + "/ledger"
            ])
        guard outcome.status == 0 else { throw BenchError(text: "moodledger erase --all exited \(outcome.status)") }
        record("erase_all_s", outcome.seconds, places: 3)
        record("erase_peak_rss_mb", Double(outcome.peakResidentBytes) / 1_048_576, places: 1)
        let after = try Ledger.open(
            at: directory + "/ledger",
            options: {
                var o = Ledger.Options(); o.readOnly = true; return o
            }())
        results.append(("erase_all_bytes_written", .int(after.eventLog.endOffset)))
        after.close()
    }

    /// The built `moodledger` beside this executable, if there is one.
    static var builtCLI: String? {
        let here = URL(fileURLWithPath: ProcessInfo.processInfo.arguments[0]).deletingLastPathComponent().path
        return FileManager.default.isExecutableFile(atPath: here + "/moodledger") ? here + "/moodledger" : nil
    }

    /// import_rows_per_s and import_peak_rss_mb: a Daylio export of `rows` rows (one every seven minutes from
    /// 2001, five moods, an activity and a short note each) imported into an empty ledger by the built
    /// `moodledger import` in a child process of its own: the whole command, file to durable batch and snapshot.
    mutating func importMeasures(rows: Int) throws {
        guard let cli = Self.builtCLI else {
            results.append(("import_rows_per_s", .string("skipped: no moodledger beside moodledger-bench")))
            return
        }
        // One row every seven minutes from 2001 stays inside the model's dates (before 2200) up to this many rows.
        let inRange = 198 * 365 * 24 * 60 / 7
        guard rows <= inRange else {
            results.append(
                (
                    "import_rows_per_s",
                    .string("skipped: \(rows) rows, one every seven minutes from 2001, would run past 2199")
                ))
            return
        }
        let csv = directory + "/daylio.csv"
        try Self.writeDaylio(rows: rows, to: csv)
        let target = directory + "/imported"
        guard try MeasuredChild.run(cli, ["init", "--ledger", target]).status == 0 else {
            throw BenchError(text: "init failed")
        }
        let outcome = try MeasuredChild.measured(
            cli,
            [
                "import", csv, "--format", "daylio", "--utc-offset", "+00:00",
                "--ledger", target
            ])
        guard outcome.status == 0 else { throw BenchError(text: "moodledger import exited \(outcome.status)") }
        record("import_rows_per_s", Double(rows) / outcome.seconds, places: 0)
        record("import_peak_rss_mb", Double(outcome.peakResidentBytes) / 1_048_576, places: 1)
        results.append(("import_rows", .int(Int64(rows))))
        try? FileManager.default.removeItem(atPath: csv)
        try? FileManager.default.removeItem(atPath: target)
    }

    /// Writes a deterministic Daylio export (the header of Daylio's current version).
    static func writeDaylio(rows: Int, to path: String) throws {
        let moods = ["rad", "good", "meh", "bad", "awful"]
        let activities = ["walk", "work | friends", "family", "", "sleep early | reading"]
        let weekdays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
        var out = Array("full_date,date,weekday,time,mood,activities,note\n".utf8)
        out.reserveCapacity(min(rows, 4_000_000) * 72)
        let start = 11_323  // 2001-01-01 as days since 1970
        for row in 0..<rows {
            let minutes = row * 7
            let day = LocalDate(daysSinceEpoch: Int32(start + minutes / 1440))
            let time = minutes % 1440
            let line =
                "\(day),\(day.components.day) \(day.components.month),\(weekdays[(start + minutes / 1440 + 3) % 7]),"
                + "\(time / 60):\(time % 60 < 10 ? "0" : "")\(time % 60),\(moods[row % 5]),\(activities[row % 5]),"
                + (row % 3 == 0 ? "a note for row \(row)" : "") + "\n"
            out.append(contentsOf: line.utf8)
        }
        try Data(out).write(to: URL(fileURLWithPath: path))
    }

    /// A cheap summary to check two opens agree (the tests prove full equality).
    static func fingerprint(_ state: LedgerState) -> String {
        let series = state.dailySeries()
        let sum = series.reduce(0.0) { $0 + ($1.averageValence ?? 0) * Double($1.entryCount) }
        return "\(state.seq)/\(state.entries.count)/\(state.outbox.recordCount)/\(series.count)/\(sum)"
    }
}

struct BenchError: Error, CustomStringConvertible {
    var text: String
    var description: String { text }
}
