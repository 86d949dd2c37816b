import EventLog
import MoodLedger
import Platform
import Synchronization

/// A HealthKit stand-in kept in a JSON file: `{"authorized": true, "samples": [...], "anchor": N, "anchors": {uuid: n},
/// "deleted": [{"uuid", "anchor"}]}`. For tests and the CLI's `healthkit push|pull --store FILE` on Linux, where
/// HealthKit does not exist. It follows HealthKit's rules: a saved sample gets the store's own uuid, the app's id
/// kept only as its `external_uuid` (what `HKMetadataKeyExternalUUID` holds), and a delete finds the sample by it;
/// every save and delete takes the next anchor number; ``changes(after:)`` answers what came after the anchor it is
/// given (8 bytes, big-endian), deletions by the store's uuid. A sample with no anchor number (a file written by
/// hand, or before anchors) is reported by every call.
public final class FileHealthStore: HealthStore, Sendable {
    public let path: String
    let io: any PlatformIO
    let lock = Mutex(())

    /// Opens (or, on first save, creates) the store file.
    public init(path: String, io: any PlatformIO = SystemIO()) {
        self.path = path
        self.io = io
    }

    struct Contents {
        var authorized = true
        var samples: [StateOfMindSample] = []
        /// The last anchor number given out.
        var anchor: UInt64 = 0
        /// Each sample's anchor number (its save).
        var anchors: [EntryID: UInt64] = [:]
        /// Deletions with their anchor numbers.
        var deleted: [(uuid: EntryID, anchor: UInt64)] = []
    }

    func read() throws -> Contents {
        guard io.exists(path) else { return Contents() }
        let bytes: [UInt8]
        do { bytes = try AtomicFile.read(path, limit: 256 << 20, io: io) } catch {
            throw HealthStoreError(.unavailable, "cannot read \(path): \(error)")
        }
        guard let root = try? JSONParser.parse(String(decoding: bytes, as: UTF8.self)) else {
            throw HealthStoreError(.unavailable, "\(path) is not a health store file")
        }
        // Every sample is validated up front: one bad sample refuses the whole file (exit 65) before anything acts.
        let now = io.nowMicroseconds() / 1000
        var samples: [StateOfMindSample] = []
        for (index, item) in (root["samples"]?.arrayValue ?? []).enumerated() {
            samples.append(try StateOfMindSample(validating: item, number: index + 1, now: now))
        }
        var contents = Contents(authorized: root["authorized"] != .bool(false), samples: samples)
        contents.anchor = UInt64(max(0, root["anchor"]?.intValue ?? 0))
        if case .object(let pairs)? = root["anchors"] {
            for (key, value) in pairs {
                if let id = EntryID(key), let number = value.intValue, number >= 0 {
                    contents.anchors[id] = UInt64(number)
                }
            }
        }
        for item in root["deleted"]?.arrayValue ?? [] {
            if let id = item["uuid"]?.stringValue.flatMap(EntryID.init), let number = item["anchor"]?.intValue,
                number >= 0
            {
                contents.deleted.append((id, UInt64(number)))
            }
        }
        return contents
    }

    func write(_ contents: Contents) throws {
        let text =
            JSONValue.object([
                ("authorized", .bool(contents.authorized)),
                ("samples", .array(contents.samples.map(\.json))),
                ("anchor", .int(Int64(contents.anchor))),
                (
                    "anchors",
                    .object(
                        contents.samples.compactMap { sample in
                            contents.anchors[sample.uuid].map { (sample.uuid.description, .int(Int64($0))) }
                        })
                ),
                (
                    "deleted",
                    .array(
                        contents.deleted.map {
                            .object([("uuid", .string($0.uuid.description)), ("anchor", .int(Int64($0.anchor)))])
                        })
                )
            ]).serialized(pretty: true) + "\n"
        do { try AtomicFile.write(Array(text.utf8), to: path, io: io) } catch {
            throw HealthStoreError(.unavailable, "cannot write \(path): \(error)")
        }
    }

    public func save(_ sample: StateOfMindSample) throws {
        try lock.withLock { _ in
            var contents = try read()
            guard contents.authorized else { throw HealthStoreError(.authorizationDenied, "authorization denied") }
            // HealthKit gives every saved object its own uuid; the app's id lives only in the metadata.
            var stored = sample
            stored.externalID = sample.uuid
            stored.uuid = EntryID.random()
            contents.samples.append(stored)
            contents.anchor += 1
            contents.anchors[stored.uuid] = contents.anchor
            try write(contents)
        }
    }

    public func delete(_ uuid: EntryID) throws {
        try lock.withLock { _ in
            var contents = try read()
            guard contents.authorized else { throw HealthStoreError(.authorizationDenied, "authorization denied") }
            // As the adapter's delete: the samples whose external id is the one the app saved them under.
            let doomed = contents.samples.filter { $0.externalID == uuid }
            guard !doomed.isEmpty else { throw HealthStoreError(.notFound, "no sample \(uuid)") }
            contents.samples.removeAll { $0.externalID == uuid }
            for sample in doomed {
                contents.anchor += 1
                contents.anchors[sample.uuid] = nil
                contents.deleted.append((sample.uuid, contents.anchor))
            }
            try write(contents)
        }
    }

    /// The file is read and every sample validated: a file that is no store, or holds a bad sample, refuses the push
    /// before it records anything (HealthKit itself never holds one).
    public func checkWritable() throws {
        try lock.withLock { _ in _ = try read() }
    }

    public func samples() throws -> [StateOfMindSample] {
        try lock.withLock { _ in
            let contents = try read()
            guard contents.authorized else { throw HealthStoreError(.authorizationDenied, "authorization denied") }
            return contents.samples
        }
    }

    public func changes(after anchor: [UInt8]?) throws -> HealthChanges {
        try lock.withLock { _ in
            let contents = try read()
            guard contents.authorized else { throw HealthStoreError(.authorizationDenied, "authorization denied") }
            var since: UInt64 = 0
            if let anchor {
                guard anchor.count == 8 else {
                    throw HealthStoreError(.invalidData, "the anchor is not one of this store's")
                }
                since = anchor.reduce(0) { $0 << 8 | UInt64($1) }
            }
            // A sample with no anchor number (a file written by hand, or before anchors) is always reported: the
            // pull's import is idempotent, so reporting it again adds nothing.
            let added = contents.samples.filter { contents.anchors[$0.uuid].map { $0 > since } ?? true }
            let deleted = anchor == nil ? [] : contents.deleted.filter { $0.anchor > since }.map(\.uuid)
            let bytes = (0..<8).map { UInt8(truncatingIfNeeded: contents.anchor >> (56 - 8 * $0)) }
            return HealthChanges(added: added, deleted: deleted, anchor: bytes)
        }
    }

    /// Grants or denies access (what the user does in Settings).
    public func setAuthorized(_ authorized: Bool) throws {
        try lock.withLock { _ in
            var contents = try read()
            contents.authorized = authorized
            try write(contents)
        }
    }
}
