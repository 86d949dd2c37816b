#if canImport(HealthKit)
    import Foundation
    import HealthKit

    /// ``HealthStore`` over Apple's `HKHealthStore` (iOS 18 / macOS 15 and later). Not compiled on Linux, where
    /// HealthKit does not exist; the Linux build and tests use ``FileHealthStore``.
    // @unchecked Sendable: it holds only an `HKHealthStore`, which Apple documents as safe to use from any thread.
    @available(iOS 18.0, macOS 15.0, watchOS 11.0, *)
    public final class HKHealthStoreAdapter: HealthStore, @unchecked Sendable {
        let store = HKHealthStore()
        public init() {}

        public func save(_ sample: StateOfMindSample) throws {
            let date = Date(timeIntervalSince1970: Double(sample.date.milliseconds) / 1000)
            let object = HKStateOfMind(
                date: date, kind: sample.kind == .dailyMood ? .dailyMood : .momentaryEmotion,
                valence: sample.valence,
                labels: sample.labels.compactMap { $0.appleRawValue.flatMap(HKStateOfMind.Label.init(rawValue:)) },
                associations: sample.associations.compactMap {
                    $0.appleRawValue.flatMap(HKStateOfMind.Association.init(rawValue:))
                },
                metadata: [HKMetadataKeyExternalUUID: sample.uuid.description])
            try wait { done in store.save(object) { _, error in done(error) } }
        }

        public func delete(_ uuid: EntryID) throws {
            let predicate = HKQuery.predicateForObjects(
                withMetadataKey: HKMetadataKeyExternalUUID,
                allowedValues: [uuid.description])
            try wait { done in
                store.deleteObjects(of: HKObjectType.stateOfMindType(), predicate: predicate) { _, _, error in
                    done(error)
                }
            }
        }

        public func samples() throws -> [StateOfMindSample] {
            var result: [StateOfMindSample] = []
            try wait { done in
                let query = HKSampleQuery(
                    sampleType: HKObjectType.stateOfMindType(), predicate: nil,
                    limit: HKObjectQueryNoLimit, sortDescriptors: nil
                ) { _, samples, error in
                    for case let mind as HKStateOfMind in samples ?? [] {
                        result.append(
                            StateOfMindSample(
                                uuid: EntryID(mind.uuid.uuidString)!,
                                date: LoggedAt(
                                    milliseconds: Int64(mind.startDate.timeIntervalSince1970 * 1000),
                                    utcOffsetMinutes: TimeZone.current.secondsFromGMT(for: mind.startDate) / 60),
                                kind: mind.kind == .dailyMood ? .dailyMood : .momentaryEmotion, valence: mind.valence,
                                labels: mind.labels.compactMap { MoodLabel(appleRawValue: $0.rawValue) },
                                associations: mind.associations.compactMap {
                                    MoodAssociation(appleRawValue: $0.rawValue)
                                }))
                    }
                    done(error)
                }
                store.execute(query)
            }
            return result
        }

        private func wait(_ body: (@escaping (Error?) -> Void) -> Void) throws {
            let semaphore = DispatchSemaphore(value: 0)
            var failure: Error?
            body { error in
                failure = error
                semaphore.signal()
            }
            semaphore.wait()
            if let error = failure as? HKError, error.code == .errorAuthorizationDenied {
                throw HealthStoreError(.authorizationDenied, "authorization denied")
            }
            if let failure { throw HealthStoreError(.unavailable, failure.localizedDescription) }
        }
    }
#endif
