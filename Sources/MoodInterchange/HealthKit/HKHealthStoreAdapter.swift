import MoodLedger

#if canImport(HealthKit)
    import Foundation
    import HealthKit

    /// ``HealthStore`` over Apple's `HKHealthStore` (iOS 18 / macOS 15 and later), through its async APIs. Not
    /// compiled on Linux, where HealthKit does not exist; the Linux build and tests use ``FileHealthStore``, which
    /// follows the same anchor rules.
    ///
    /// Asynchronous end to end: use it with `try await` — the ledger's `async` ``Ledger/pushToHealthKit(_:now:)`` and
    /// ``Ledger/pullFromHealthKit(_:)`` await HealthKit's own `async` calls here (no thread waits; a cancelled task
    /// begins no new item). The synchronous forms ``HealthStore`` also requires refuse with `unavailable` and say so:
    /// waiting for HealthKit would hold a thread, and from Swift's cooperative pool could deadlock it.
    @available(iOS 18.0, macOS 15.0, watchOS 11.0, visionOS 2.0, *)
    public final class HKHealthStoreAdapter: HealthStore {
        /// `HKHealthStore` is documented as safe to use from any thread, and Apple declares it `Sendable`.
        let store = HKHealthStore()

        public init() {}

        /// Asks the user for read and write access to exactly one type: `HKObjectType.stateOfMindType()`.
        /// - Throws: HealthKit's error when it cannot ask.
        public func requestAuthorization() async throws {
            let type: Set<HKSampleType> = [HKObjectType.stateOfMindType()]
            try await store.requestAuthorization(toShare: type, read: type)
        }

        /// Pulls into `ledger` whenever a State of Mind is written or deleted in HealthKit (by the Health app, another
        /// app, another of the person's devices), even while the app is in the background: turns on HealthKit's
        /// background delivery for the type (the app needs the HealthKit background-delivery entitlement) and runs an
        /// `HKObserverQuery`, whose every call is one anchored ``Ledger/pullFromHealthKit(_:)``. HealthKit wakes the
        /// app for it and waits for the pull before letting it sleep again. Call it once at launch, after
        /// ``requestAuthorization()``; keep the query to stop it (`HKHealthStore.stop(_:)`).
        /// - Parameters:
        ///   - ledger: where the samples go.
        ///   - pulled: told what each pull did, or why it failed (it is retried on HealthKit's next call).
        /// - Returns: the running query.
        /// - Throws: HealthKit's error when background delivery cannot be turned on.
        public func deliverChanges(
            to ledger: Ledger,
            pulled: @escaping @Sendable (Result<HealthKitSyncReport, any Error>) -> Void = { _ in }
        ) async throws -> HKObserverQuery {
            let type = HKObjectType.stateOfMindType()
            try await store.enableBackgroundDelivery(for: type, frequency: .immediate)
            let query = HKObserverQuery(sampleType: type, predicate: nil) { [self] _, completion, error in
                let done = CompletionBox(completion)
                guard error == nil else { return done.call() }
                // HealthKit waits for the completion before it lets the app sleep again: called once the pull is in.
                Task {
                    do { pulled(.success(try await ledger.pullFromHealthKit(self))) } catch { pulled(.failure(error)) }
                    done.call()
                }
            }
            store.execute(query)
            return query
        }

        public func save(_ sample: StateOfMindSample) throws {
            throw Self.asynchronousOnly
        }

        public func save(_ sample: StateOfMindSample) async throws {
            let date = Date(timeIntervalSince1970: Double(sample.date.milliseconds) / 1000)
            let object = HKStateOfMind(
                date: date, kind: sample.kind == .dailyMood ? .dailyMood : .momentaryEmotion,
                valence: sample.valence,
                labels: sample.labels.compactMap { $0.appleRawValue.flatMap(HKStateOfMind.Label.init(rawValue:)) },
                associations: sample.associations.compactMap {
                    $0.appleRawValue.flatMap(HKStateOfMind.Association.init(rawValue:))
                },
                metadata: Self.metadata(of: sample))
            try await Self.translatingErrors { try await store.save(object) }
        }

        public func delete(_ uuid: EntryID) throws {
            throw Self.asynchronousOnly
        }

        public func delete(_ uuid: EntryID) async throws {
            let predicate = HKQuery.predicateForObjects(
                withMetadataKey: HKMetadataKeyExternalUUID, allowedValues: [uuid.description])
            let count = try await Self.translatingErrors {
                try await store.deleteObjects(of: HKObjectType.stateOfMindType(), predicate: predicate)
            }
            if count == 0 { throw HealthStoreError(.notFound, "no sample \(uuid)") }
        }

        public func samples() throws -> [StateOfMindSample] { throw Self.asynchronousOnly }

        public func changes(after anchor: [UInt8]?) throws -> HealthChanges {
            throw Self.asynchronousOnly
        }

        public func changes(after anchor: [UInt8]?) async throws -> HealthChanges {
            var start: HKQueryAnchor?
            if let anchor {
                start = try? NSKeyedUnarchiver.unarchivedObject(ofClass: HKQueryAnchor.self, from: Data(anchor))
                guard start != nil else { throw HealthStoreError(.invalidData, "the kept anchor is not HealthKit's") }
            }
            let descriptor = HKAnchoredObjectQueryDescriptor(predicates: [.stateOfMind()], anchor: start)
            let store = self.store
            // The result is not Sendable: it is read where it was made, and only the port's own values leave.
            return try await Self.translatingErrors {
                let result = try await descriptor.result(for: store)
                let next = try NSKeyedArchiver.archivedData(
                    withRootObject: result.newAnchor, requiringSecureCoding: true)
                return HealthChanges(
                    added: result.addedSamples.compactMap(Self.sample),
                    deleted: result.deletedObjects.compactMap { EntryID($0.uuid.uuidString) }, anchor: Array(next))
            }
        }

        /// What a saved sample carries beyond HealthKit's fields: the app's id, the zone it was logged in (as a name
        /// HealthKit reads back, `GMT+0100`), the note and the 1–10 score (`Specs/imports-exports.md`).
        static func metadata(of sample: StateOfMindSample) -> [String: Any] {
            var metadata: [String: Any] = [
                HKMetadataKeyExternalUUID: sample.uuid.description,
                HKMetadataKeyTimeZone: TimeZone(secondsFromGMT: sample.date.utcOffsetMinutes * 60)?.identifier ?? "GMT"
            ]
            if let notes = sample.notes { metadata[StateOfMindSample.notesMetadataKey] = notes }
            if let score = sample.score { metadata[StateOfMindSample.scoreMetadataKey] = NSNumber(value: score) }
            if let entry = sample.ledgerEntryID { metadata[StateOfMindSample.entryMetadataKey] = entry.description }
            return metadata
        }

        /// A state of mind as the port sees it: HealthKit's own uuid, the id the app saved it under
        /// (`HKMetadataKeyExternalUUID`), and the offset of the zone it was logged in (`HKMetadataKeyTimeZone`, else
        /// the device's).
        static func sample(_ mind: HKStateOfMind) -> StateOfMindSample? {
            guard let uuid = EntryID(mind.uuid.uuidString) else { return nil }
            let external = (mind.metadata?[HKMetadataKeyExternalUUID] as? String).flatMap(EntryID.init)
            let zone =
                (mind.metadata?[HKMetadataKeyTimeZone] as? String).flatMap(TimeZone.init(identifier:)) ?? .current
            return StateOfMindSample(
                uuid: uuid, externalID: external,
                date: LoggedAt(mind.startDate, timeZone: zone),
                kind: mind.kind == .dailyMood ? .dailyMood : .momentaryEmotion, valence: mind.valence,
                labels: mind.labels.compactMap { MoodLabel(appleRawValue: $0.rawValue) },
                associations: mind.associations.compactMap { MoodAssociation(appleRawValue: $0.rawValue) },
                notes: mind.metadata?[StateOfMindSample.notesMetadataKey] as? String,
                score: (mind.metadata?[StateOfMindSample.scoreMetadataKey] as? NSNumber)?.intValue,
                ledgerEntryID: (mind.metadata?[StateOfMindSample.entryMetadataKey] as? String).flatMap(EntryID.init))
        }

        /// Runs `work`, turning HealthKit's errors into ``HealthStoreError``s.
        static func translatingErrors<T>(_ work: () async throws -> T) async throws -> T {
            do { return try await work() } catch let error as HealthStoreError {
                throw error
            } catch let error as HKError where error.code == .errorAuthorizationDenied {
                throw HealthStoreError(.authorizationDenied, "authorization denied")
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                throw HealthStoreError(.unavailable, error.localizedDescription)
            }
        }

        /// What the synchronous forms answer: this store is used with `await`.
        static let asynchronousOnly = HealthStoreError(
            .unavailable,
            "HKHealthStoreAdapter is asynchronous: use try await ledger.pushToHealthKit / pullFromHealthKit")
    }

    /// HealthKit's completion handler of one observer call, handed to the task that pulls.
    // @unchecked Sendable: HealthKit documents the handler as callable from any thread; it is called once.
    private final class CompletionBox: @unchecked Sendable {
        let completion: () -> Void
        init(_ completion: @escaping () -> Void) { self.completion = completion }
        func call() { completion() }
    }
#endif
