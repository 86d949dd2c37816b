import EventLog
import Platform
import Synchronization

/// A HealthKit stand-in kept in a JSON file: `{"authorized": true, "samples": [...]}`. For tests and the CLI's
/// `healthkit push|pull --store FILE` on Linux, where HealthKit does not exist.
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
        let now = io.now() / 1000
        var samples: [StateOfMindSample] = []
        for (index, item) in (root["samples"]?.arrayValue ?? []).enumerated() {
            samples.append(try StateOfMindSample(validating: item, number: index + 1, now: now))
        }
        return Contents(authorized: root["authorized"] != .bool(false), samples: samples)
    }

    func write(_ contents: Contents) throws {
        let text =
            JSONValue.object([
                ("authorized", .bool(contents.authorized)),
                ("samples", .array(contents.samples.map(\.json)))
            ]).serialized(pretty: true) + "\n"
        do { try AtomicFile.write(Array(text.utf8), to: path, io: io) } catch {
            throw HealthStoreError(.unavailable, "cannot write \(path): \(error)")
        }
    }

    public func save(_ sample: StateOfMindSample) throws {
        try lock.withLock { _ in
            var contents = try read()
            guard contents.authorized else { throw HealthStoreError(.authorizationDenied, "authorization denied") }
            contents.samples.removeAll { $0.uuid == sample.uuid }
            contents.samples.append(sample)
            try write(contents)
        }
    }

    public func delete(_ uuid: EntryID) throws {
        try lock.withLock { _ in
            var contents = try read()
            guard contents.authorized else { throw HealthStoreError(.authorizationDenied, "authorization denied") }
            guard contents.samples.contains(where: { $0.uuid == uuid }) else {
                throw HealthStoreError(.notFound, "no sample \(uuid)")
            }
            contents.samples.removeAll { $0.uuid == uuid }
            try write(contents)
        }
    }

    public func samples() throws -> [StateOfMindSample] {
        try lock.withLock { _ in
            let contents = try read()
            guard contents.authorized else { throw HealthStoreError(.authorizationDenied, "authorization denied") }
            return contents.samples
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
