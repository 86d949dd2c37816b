import Dispatch
import MoodLedger

/// The push through the reference server's batch route (`Specs/sync.md`, *Batch writes*): a batch of attempts goes
/// out as a few requests of ``Configuration/batchRequestItems`` items each, as tasks of the run; each item's answer
/// is classified as its single request's would be, and its follow-ups (a read after a 412, a create after a 404, an
/// update after a create the server had) go one by one.
extension SyncEngine {
    /// Whether this remote takes batches: the reference server's route, advertised and recorded as `batch`.
    var batches: Bool {
        let remote = dialect.remote
        return remote.has(.batch) && remote.has(.extensions) && dialect.dialect == .moodAPI
    }

    /// Sends `batch` as batch requests (at most `concurrency` in flight); their items' verdicts, in order.
    func launchBatched(_ batch: [Sending], stop: StopFlag) -> InFlight {
        let size = max(1, configuration.batchRequestItems)
        let ranges = stride(from: 0, to: batch.count, by: size).map { $0..<min(batch.count, $0 + size) }
        let requests = inFlight(ranges.count) { [self] index -> [SyncVerdict] in
            let range = ranges[index]
            if stop.value.load(ordering: .relaxed) {
                return range.map { _ in
                    .retry(status: nil, error: "not sent: the run stopped (credentials refused)", retryAfter: nil)
                }
            }
            let verdicts = await deliverBatch(Array(batch[range]))
            if verdicts.contains(where: { if case .unauthorized = $0 { true } else { false } })
                || verdicts.contains(where: { SyncPlanner.untrusted($0) != nil })
            {
                stop.value.store(true, ordering: .relaxed)
            }
            return verdicts
        }
        return InFlight(
            batch: batch, answers: executor.task { await requests.value.flatMap { $0 } })
    }

    /// One batch request for `items`: every item's verdict, in order.
    func deliverBatch(_ items: [Sending]) async -> [SyncVerdict] {
        let planner = self.planner
        var verdicts = [SyncVerdict?](repeating: nil, count: items.count)
        var sent: [(index: Int, request: SyncRequest)] = []
        var bodies: [JSONValue] = []
        for (index, sending) in items.enumerated() {
            if sending.item.operation != .delete && sending.entry == nil {
                verdicts[index] = await deliver(sending.item, key: sending.key, entry: sending.entry)
                continue
            }
            let request = planner.request(
                for: sending.item.operation, item: sending.item, entry: sending.entry, key: sending.key)
            var fields: [(String, JSONValue)] = [("method", .string(request.method))]
            if request.method != "POST" {
                fields.append(("id", .string(String(request.path.split(separator: "/").last ?? ""))))
            }
            fields.append(("idempotency_key", .optional(request.idempotencyKey) { .string($0) }))
            fields.append(("if_match", .optional(request.ifMatch) { .string($0) }))
            fields.append(("replaces", .optional(request.replaces) { .string($0) }))
            if let body = request.body, let json = try? JSONParser.parse(String(decoding: body, as: UTF8.self)) {
                fields.append(("body", json))
            }
            bodies.append(.object(fields))
            sent.append((index, request))
        }
        guard !sent.isEmpty else { return verdicts.map { $0! } }
        let request = SyncRequest(
            method: "POST", path: "/api/v1/mood/batch",
            body: JSONValue.object([("items", .array(bodies))]).serializedBytes(),
            maximumResponseBytes: sent.count * SyncLimits.entryAnswerBytes)
        let (answer, results) = await sendBatch(request, count: sent.count)
        for (position, (index, itemRequest)) in sent.enumerated() {
            let sending = items[index]
            guard let results, let result = results[position] else {
                // The batch itself failed: each item by the batch's verdict, unless the server lacks the route.
                verdicts[index] = await batchFallback(answer, sending)
                continue
            }
            // Each item's result is judged as its single request's answer would be, against what it sent.
            var headers = result.headers
            if result.replayed { headers.append(("Idempotent-Replayed", "true")) }
            let judged = planner.judge(
                itemRequest, operation: sending.item.operation, entryID: sending.item.entryID, status: result.status,
                headers: headers, body: result.body, now: ledger.options.clock())
            verdicts[index] = await deliver(sending.item, key: sending.key, entry: sending.entry, answered: judged)
        }
        return verdicts.map { $0! }
    }

    typealias ItemResult = (status: Int, headers: [(name: String, value: String)], body: [UInt8], replayed: Bool)

    /// Sends a batch (once more with re-read credentials after a 401): the batch's own verdict, and its items'
    /// results when it was answered 200 with one result per item.
    private func sendBatch(_ request: SyncRequest, count: Int) async -> (SyncVerdict, [ItemResult?]?) {
        let (answer, response) = await send(request, operation: .create, entryID: EntryID.none)
        let verdict = answer.verdict
        guard let response, response.status == 200,
            let json = try? JSONParser.parse(String(decoding: response.body, as: UTF8.self)),
            let results = json["data"]?["results"]?.arrayValue, results.count == count
        else { return (verdict, nil) }
        return (
            verdict,
            results.map { result -> ItemResult? in
                guard let status = result["status"]?.intValue, (100..<600).contains(status) else { return nil }
                var headers: [(name: String, value: String)] = []
                if let etag = result["etag"]?.stringValue { headers.append(("ETag", etag)) }
                let replayed = result["replayed"] == .bool(true)
                let body = result["body"].map { $0 == .null ? [] : $0.serializedBytes() } ?? []
                return (status, headers, body, replayed)
            }
        )
    }

    /// An item of a batch that got no answer of its own: a network failure, a 5xx, a 429 or a 401 is the item's too;
    /// anything else (the server lacks the route after all) sends the item alone.
    private func batchFallback(_ answer: SyncVerdict, _ sending: Sending) async -> SyncVerdict {
        switch answer {
        case .retry, .unauthorized: return answer
        default: return await deliver(sending.item, key: sending.key, entry: sending.entry)
        }
    }
}
