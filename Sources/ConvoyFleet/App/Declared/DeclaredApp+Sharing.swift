import ConvoyCrypto
import ConvoyJSON
import ConvoySodium
import ConvoyWire

/// A declared app's updates: sealed as its plaintext template says, posted as its rows, heard and caught up on its table.
extension DeclaredApp {
    // MARK: Sending

    public func plaintext(of update: LocationPayload) -> LocationPayload { plain.plaintext(of: update) }

    public func seal(_ update: LocationPayload, to recipient: PublicKey) throws(CryptoError) -> String {
        var bytes = try plain.bytes(update)
        defer { bytes.withUnsafeMutableBytes { Sodium.zero($0) } }
        return spec.posting.sealed.encode(try SealedBox.seal(bytes, to: recipient))
    }

    public func send(_ updates: [OutgoingUpdate], from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Posted {
        try await send(updates, from: session, via: http, stampedAt: nil)
    }

    /// `send`, with the row's clock placeholders (`{{now.iso}}`…) at `stampedAt` (Unix seconds; nil: now): `convoy app
    /// check` posts a row as old as the retention window says must go.
    func send(_ updates: [OutgoingUpdate], from session: Session, via http: SupabaseHTTP, stampedAt: Double?) async throws(SupabaseError) -> Posted {
        let p = spec.posting
        let me = JSONValue.string(session.userID)
        func row(_ u: OutgoingUpdate, into out: inout [UInt8]) throws(SupabaseError) {
            do {
                try p.row.write(into: &out) { name in
                    switch name {
                    case "me.id": me
                    case "recipient.id": .string(u.recipient)
                    case "sealed": .string(u.body)
                    default: Self.clockValue(name, at: stampedAt)
                    }
                }
            } catch {
                throw SupabaseError(kind: .unexpectedResponse, message: "\(spec.file): posting.row: no value for {{\(error.name)}}")
            }
        }
        let rest = SupabaseREST(http)
        guard p.bulk else {
            // One insert a friend, in turn: a failure stops the tick there (the rows before it are stored; the device
            // counts the rest lost with the failure's reason, and a retry posts the tick again).
            var total = 0
            for u in updates {
                var body: [UInt8] = []
                try row(u, into: &body)
                try await rest.insert(p.table, json: body, token: session.accessToken)
                total += body.count
            }
            return Posted(requests: updates.count, bytes: total)
        }
        var body: [UInt8] = [UInt8(ascii: "[")]
        body.reserveCapacity(updates.count * 200)
        for (i, u) in updates.enumerated() {
            if i > 0 { body.append(UInt8(ascii: ",")) }
            try row(u, into: &body)
        }
        body.append(UInt8(ascii: "]"))
        try await rest.insert(p.table, json: body, token: session.accessToken)
        return Posted(requests: 1, bytes: body.count)
    }

    // MARK: Receiving

    /// The receiving filter for `userID` (`recipient_id=eq.…`).
    func filter(for userID: String) -> String {
        (try? Template.fill(spec.receiving.filter) { $0 == "me.id" ? userID : nil }) ?? spec.receiving.filter
    }

    public func subscription(for userID: String) -> AppSubscription {
        let r = spec.receiving
        // An app of actions alone hears nothing: its phone's socket joins its topic with no bindings.
        var bindings: [RealtimeClient.Binding] = spec.sharesLocations ? [.init(event: "INSERT", table: r.table, filter: filter(for: userID))] : []
        if spec.links.duringRun {
            // Requests to the phone, and its own requests accepted.
            let c = spec.links.columns
            bindings.append(.init(event: "INSERT", table: spec.links.table, filter: "\(c.invitee)=eq.\(userID)"))
            bindings.append(.init(event: "UPDATE", table: spec.links.table, filter: "\(c.inviter)=eq.\(userID)"))
        }
        let topic = (try? Template.fill(r.topic) { $0 == "me.id" ? userID : nil }) ?? r.topic
        return AppSubscription(topic: topic.hasPrefix("realtime:") ? topic : "realtime:\(topic)", bindings: bindings)
    }

    public func incoming(_ change: RealtimeClient.Change) -> Incoming {
        let r = spec.receiving
        if spec.links.duringRun, change.table == spec.links.table { return linkChange(change) }
        guard change.table == r.table, change.type == "INSERT" else { return .notMine }
        let record = change.record
        guard let sender = record[r.sender], let body = record[r.body] else { return .malformed }
        return .update(IncomingUpdate(sender: sender, body: body, id: record[r.id].flatMap { Int64($0) },
                                      createdAt: record[spec.retention.column].flatMap(CommitTimestamp.parse)))
    }

    private func linkChange(_ change: RealtimeClient.Change) -> Incoming {
        let (l, c, r) = (spec.links, spec.links.columns, change.record)
        guard let id = r[c.id], let status = r[c.status], let inviter = r[c.inviter], let invitee = r[c.invitee] else { return .malformed }
        switch (change.type, status) {
        case ("INSERT", l.pending): return .pairing(.requested(id: id, from: inviter))
        case ("UPDATE", l.active): return .pairing(.accepted(id: id, by: invitee))
        default: return .notMine
        }
    }

    public func open(_ update: IncomingUpdate, with keys: BoxKeyPair) throws(CryptoError) -> LocationPayload {
        let sealed = try spec.posting.sealed.decode(update.body)
        var bytes = try SealedBox.open(sealed, with: keys)
        defer { bytes.withUnsafeMutableBytes { Sodium.zero($0) } }
        return try plain.read(bytes)
    }

    public func catchUp(for userID: String, since: Double, after cursor: Int64, limit: Int, token: String,
                        via http: SupabaseHTTP) async throws(SupabaseError) -> CatchUpPage {
        guard spec.sharesLocations else { return CatchUpPage(updates: [], bytes: 0, cursor: cursor) }
        let (r, created) = (spec.receiving, spec.retention.column)
        let query = "select=\(r.id),\(r.sender),\(r.body),\(created)&\(filter(for: userID))&\(created)=gte.\(CommitTimestamp.format(since))"
            + "&\(r.id)=gt.\(cursor)&order=\(r.id).asc&limit=\(limit)"
        let response = try await SupabaseREST(http).selectSized(r.table, query: query, token: token)
        var next = cursor
        var updates: [IncomingUpdate] = []
        for row in response.rows {
            guard let sender = row[r.sender]?.flatText, let body = row[r.body]?.string else { continue }
            let id = row[r.id]?.flatText.flatMap { Int64($0) }
            if let id { next = max(next, id) }
            updates.append(IncomingUpdate(sender: sender, body: body, id: id, createdAt: row[created]?.string.flatMap(CommitTimestamp.parse)))
        }
        return CatchUpPage(updates: updates, bytes: response.bytes, cursor: next)
    }

    // MARK: Retention

    public func oldestUpdates(of userID: String, limit: Int, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [StoredUpdate] {
        try await stored("\(filter(for: userID))&order=\(spec.retention.column).asc&limit=\(limit)", token: token, via: http)
    }

    public func presentUpdates(_ ids: [Int64], of userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Set<Int64> {
        let id = spec.receiving.id
        let list = ids.map(String.init).joined(separator: ",")
        let rows = try await SupabaseREST(http).select(spec.receiving.table, query: "select=\(id)&\(filter(for: userID))&\(id)=in.(\(list))", token: token)
        return Set(rows.compactMap { $0[id]?.flatText.flatMap { Int64($0) } })
    }

    public func oldestUpdates(limit: Int, serviceKey: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [StoredUpdate] {
        try await stored("order=\(spec.retention.column).asc&limit=\(limit)", token: serviceKey, via: http)
    }

    private func stored(_ query: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [StoredUpdate] {
        let (id, created) = (spec.receiving.id, spec.retention.column)
        return try await SupabaseREST(http).select(spec.receiving.table, query: "select=\(id),\(created)&\(query)", token: token).compactMap { row in
            guard let i = row[id]?.flatText.flatMap({ Int64($0) }), let text = row[created]?.string, let t = CommitTimestamp.parse(text) else { return nil }
            return StoredUpdate(id: i, createdAt: t, createdText: text)
        }
    }

    // MARK: Probes

    public func updateRequest(sender: String, recipient: String, body: String) -> AppRequest {
        let values: [String: JSONValue] = ["me.id": .string(sender), "recipient.id": .string(recipient), "sealed": .string(body)]
        var fields: [(name: String, value: String)] = []
        if case .object(let members) = spec.posting.row {
            for m in members {
                guard let rendered = try? m.value.render({ values[$0] ?? Self.clockValue($0) }),
                      let value = JSONScanner.parse(rendered) else { continue }
                fields.append((m.key, value.flatText ?? "null"))
            }
        }
        return AppRequest(method: "POST", path: "/rest/v1/\(spec.posting.table)", headers: [("Prefer", "return=minimal")], fields: fields)
    }
}
