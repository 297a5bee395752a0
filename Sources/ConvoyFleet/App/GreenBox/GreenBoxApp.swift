import ConvoyCrypto
import ConvoySodium
import ConvoyWire
import Foundation

/// Green Box (greenbox-prd.md) on a Supabase backend: keys on `users`,
/// friendships by invite code (`create_invite`/`accept_invite`), one
/// `encrypted_locations` row per friend per update sealed with
/// `crypto_box_seal`, received as `postgres_changes` INSERTs filtered to the
/// recipient, caught up by paging its rows after a gap.
public struct GreenBoxApp: PairwiseApp, RegisteredApp {
    static let appName = "greenbox"

    /// What is sealed.
    public enum Payload: String, Sendable, CaseIterable {
        /// The PRD's keys and Convoy's `seq` and `sent_ns`, `ts` to the millisecond (the default).
        case convoy
        /// Exactly the PRD's payload, `{"lat","lon","ts","acc"}`, `ts` in whole seconds.
        case prd
    }

    /// How friends pair.
    public enum Pairing: String, Sendable, CaseIterable {
        /// Invite codes (`create_invite`, `accept_invite`) in set-up, before the timeline (the default).
        case codes
        /// The PRD's way, on the phones during the run: the inviter inserts a `pending` friendship
        /// with `requested_by`, the invitee, told over Realtime, updates it to `active`.
        case prd
    }

    /// How a tick's rows are posted.
    public enum Inserts: String, Sendable, CaseIterable {
        /// All of a tick's rows in one bulk insert (Convoy's batching; the default).
        case bulk
        /// One insert a friend, in turn, as PRD §4.4 step 2f says ("for each active friend … insert a new row").
        case each
    }

    public let name = "greenbox"
    public var payload: Payload
    public var pairing: Pairing
    public var inserts: Inserts

    /// The scenario's modes: `payload: convoy|prd`, `pairing: codes|prd`, `inserts: bulk|each`.
    static let modes: [(option: String, values: [String])] = [("payload", Payload.allCases.map(\.rawValue)),
                                                               ("pairing", Pairing.allCases.map(\.rawValue)),
                                                               ("inserts", Inserts.allCases.map(\.rawValue))]

    public init(payload: Payload = .convoy, pairing: Pairing = .codes, inserts: Inserts = .bulk) {
        (self.payload, self.pairing, self.inserts) = (payload, pairing, inserts)
    }

    static func make(_ options: AppOptions) -> GreenBoxApp { GreenBoxApp(options) }

    init(_ options: AppOptions) {
        self.init(payload: options["payload"].flatMap(Payload.init(rawValue:)) ?? .convoy,
                  pairing: options["pairing"].flatMap(Pairing.init(rawValue:)) ?? .codes,
                  inserts: options["inserts"].flatMap(Inserts.init(rawValue:)) ?? .bulk)
    }

    // MARK: Onboarding and pairing (PRD §4.2, §5)

    public func finishSignUp(keys: BoxKeyPair, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) {
        try await publishKey(keys.publicKey, session: session, via: http)
    }

    public func publishKey(_ key: PublicKey, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) {
        guard pairing == .prd else {
            return try await SupabaseREST(http).upsert(GreenBoxRows.users, rows: GreenBoxRows.User(id: session.userID, publicKey: key.base64),
                                                       onConflict: "id", token: session.accessToken)
        }
        let row = GreenBoxRows.UserWithCreation(id: session.userID, publicKey: key.base64, createdAt: CommitTimestamp.format(Date().timeIntervalSince1970))
        try await SupabaseREST(http).upsert(GreenBoxRows.users, rows: row, onConflict: "id", token: session.accessToken)
    }

    public func hasPublishedKey(_ userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool {
        try await !SupabaseREST(http).select(GreenBoxRows.users, query: "select=id&id=eq.\(userID)", token: token,
                                             as: GreenBoxRows.User.self).rows.isEmpty
    }

    public func befriend(_ request: FriendRequest, via http: SupabaseHTTP) async throws(SupabaseError) {
        let code = try await invite(preference: request.inviterPreference, token: request.inviter.accessToken, via: http)
        if !request.pending {
            try await accept(code: code, preference: request.inviteePreference, token: request.invitee.accessToken, via: http)
        }
    }

    public func activeFriendships(token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Int {
        try await SupabaseREST(http).select(GreenBoxRows.friendships, query: "select=status&status=eq.active", token: token,
                                            as: GreenBoxRows.Friendship.self).rows.count
    }

    public func publicKeys(of userIDs: [String], token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [String: PublicKey] {
        guard !userIDs.isEmpty else { return [:] }
        let query = userIDs.count == 1 ? "select=id,public_key&id=eq.\(userIDs[0])" : "select=id,public_key&id=in.(\(userIDs.joined(separator: ",")))"
        let rows = try await SupabaseREST(http).select(GreenBoxRows.users, query: query, token: token, as: GreenBoxRows.User.self).rows
        var keys: [String: PublicKey] = [:]
        for row in rows {
            guard let text = row.publicKey, let key = try? PublicKey(base64: text) else { continue }
            if keys[row.id] == nil { keys[row.id] = key }
        }
        return keys
    }

    public func invite(preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> String {
        try await SupabaseREST(http).rpc(GreenBoxRows.createInvite, arguments: GreenBoxRows.InviteArguments(preference: preference), token: token,
                                         returning: GreenBoxRows.Invite.self).code
    }

    public func accept(code: String, preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) {
        _ = try await SupabaseREST(http).rpc(GreenBoxRows.acceptInvite, arguments: GreenBoxRows.AcceptArguments(code: code, preference: preference),
                                             token: token)
    }

    /// With `pairing: prd`, PRD §4.1's re-acceptance: the active friendship is deleted and asked for again as a new
    /// pending request (the reinstalled phone as its requester), which the friend hears over Realtime and accepts as any
    /// request. A request the friend made meanwhile (it reinstalled too) is left for this phone to accept.
    public func requestAgain(_ friend: Invitee, from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool {
        guard pairing == .prd else { return false }
        let (me, them) = (session.userID, friend.userID)
        _ = try await SupabaseREST(http).deleteReturning(GreenBoxRows.friendships,
                                                         query: "user_id_1=in.(\(me),\(them))&user_id_2=in.(\(me),\(them))&status=eq.active",
                                                         token: session.accessToken)
        _ = try await requestFriendship(to: friend, preference: "", from: session, via: http)
        return true
    }

    // MARK: The PRD's pairing, during the run (§5.2–5.3)

    public var pairsDuringRun: Bool { pairing == .prd }

    /// Its invite links expire (the embedded backend's `create_invite`, probed by probes/greenbox.yaml's expiry probe).
    public var issuesInviteCodes: Bool { true }

    public func requestFriendship(to invitee: Invitee, preference: String, from session: Session,
                                  via http: SupabaseHTTP) async throws(SupabaseError) -> String {
        // `preference` is kept on the phone (the device's pairing plan), never written: the PRD's table has no column for it.
        let row = GreenBoxRows.FriendshipRequest(userID1: session.userID, userID2: invitee.userID, requestedBy: session.userID)
        let stored = try await SupabaseREST(http).insertReturning(GreenBoxRows.friendships, rows: row, token: session.accessToken,
                                                                  as: GreenBoxRows.FriendshipRow.self)
        guard let id = stored.first?.id else { throw SupabaseError(kind: .unexpectedResponse, message: "the friendship request came back empty") }
        return String(id)
    }

    /// Idempotent (a retry after a timeout that committed finds the row active); a PATCH that changed no
    /// row — the request gone, or hidden by the project's policies — is an error, not an acceptance.
    public func acceptFriendship(_ id: String, preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) {
        guard let id = Int64(id) else { throw SupabaseError(kind: .unexpectedResponse, message: "friendship \(id) is not a row id") }
        let rows = try await SupabaseREST(http).updateReturning(GreenBoxRows.friendships, query: "id=eq.\(id)",
                                                                changes: GreenBoxRows.FriendshipAcceptance(),
                                                                token: token, as: GreenBoxRows.FriendshipRow.self)
        guard rows.contains(where: { $0.status == "active" }) else {
            throw SupabaseError(kind: .unexpectedResponse, message: "accepting friendship \(id) changed no row (gone, or not visible to the invitee)")
        }
    }

    public func pendingRequests(to userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [PairingEvent] {
        try await SupabaseREST(http).select(GreenBoxRows.friendships, query: "select=id,user_id_1,user_id_2,status,requested_by"
                                                + "&user_id_2=eq.\(userID)&status=eq.pending&order=id.asc",
                                            token: token, as: GreenBoxRows.FriendshipRow.self).rows
            .map { .requested(id: String($0.id), from: $0.requestedBy) }
    }

    public func acceptedRequests(by userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [PairingEvent] {
        try await SupabaseREST(http).select(GreenBoxRows.friendships, query: "select=id,user_id_1,user_id_2,status,requested_by"
                                                + "&requested_by=eq.\(userID)&status=eq.active&order=id.asc",
                                            token: token, as: GreenBoxRows.FriendshipRow.self).rows
            .map { .accepted(id: String($0.id), by: $0.userID1 == userID ? $0.userID2 : $0.userID1) }
    }

    // MARK: Sharing (PRD §4.4, "To send a location")

    public func plaintext(of update: LocationPayload) -> LocationPayload {
        switch payload {
        case .convoy: LocationPayload(lat: update.lat, lon: update.lon, ts: update.ts, acc: update.acc, seq: update.seq, sentNanos: update.sentNanos)
        case .prd: LocationPayload(lat: update.lat, lon: update.lon, ts: update.ts.rounded(.down), acc: update.acc)
        }
    }

    public func seal(_ update: LocationPayload, to recipient: PublicKey) throws(CryptoError) -> String {
        try GreenBoxEnvelope.seal(update, to: recipient)
    }

    public func send(_ updates: [OutgoingUpdate], from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Posted {
        if inserts == .each {
            // One insert a friend, in turn: a failure stops the tick there (the rows before it are stored and delivered;
            // the device counts the rest lost with the failure's reason, and a retry posts the tick again).
            let rest = SupabaseREST(http)
            var total = 0
            for u in updates {
                let bytes = Array(GreenBoxRows.Location.insertJSON(sender: session.userID, recipient: u.recipient, payload: u.body).utf8)
                try await rest.insert(GreenBoxRows.locations, json: bytes, token: session.accessToken)
                total += bytes.count
            }
            return Posted(requests: updates.count, bytes: total)
        }
        var body = "["
        for (i, u) in updates.enumerated() {
            if i > 0 { body += "," }
            body += GreenBoxRows.Location.insertJSON(sender: session.userID, recipient: u.recipient, payload: u.body)
        }
        body += "]"
        let bytes = Array(body.utf8)
        try await SupabaseREST(http).insert(GreenBoxRows.locations, json: bytes, token: session.accessToken)
        return Posted(requests: 1, bytes: bytes.count)
    }

    // MARK: Receiving (PRD §4.4, "To receive locations")

    public func subscription(for userID: String) -> AppSubscription {
        var bindings: [RealtimeClient.Binding] = [.init(event: "INSERT", table: GreenBoxRows.locations, filter: "recipient_id=eq.\(userID)")]
        if pairing == .prd {
            // The app listens for requests to it and for its own requests being accepted (PRD §5.3 step 6).
            bindings.append(.init(event: "INSERT", table: GreenBoxRows.friendships, filter: "user_id_2=eq.\(userID)"))
            bindings.append(.init(event: "UPDATE", table: GreenBoxRows.friendships, filter: "user_id_1=eq.\(userID)"))
        }
        return AppSubscription(topic: GreenBoxRows.topic(userID), bindings: bindings)
    }

    public func incoming(_ change: RealtimeClient.Change) -> Incoming {
        if change.table == GreenBoxRows.friendships { return friendshipChange(change) }
        guard change.table == GreenBoxRows.locations, change.type == "INSERT" else { return .notMine }
        let record = change.record
        guard let sender = record["sender_id"], let payload = record["payload"] else { return .malformed }
        return .update(IncomingUpdate(sender: sender, body: payload, id: record["id"].flatMap { Int64($0) },
                                      createdAt: record["created_at"].flatMap(CommitTimestamp.parse)))
    }

    private func friendshipChange(_ change: RealtimeClient.Change) -> Incoming {
        guard pairing == .prd else { return .notMine }
        let r = change.record
        guard let id = r["id"], Int64(id) != nil, let status = r["status"], let from = r["requested_by"],
              let one = r["user_id_1"], let two = r["user_id_2"] else { return .malformed }
        switch (change.type, status) {
        case ("INSERT", "pending"): return .pairing(.requested(id: id, from: from))
        case ("UPDATE", "active"): return .pairing(.accepted(id: id, by: from == one ? two : one))
        default: return .notMine
        }
    }

    public func open(_ update: IncomingUpdate, with keys: BoxKeyPair) throws(CryptoError) -> LocationPayload {
        try GreenBoxEnvelope.open(update.body, with: keys)
    }

    public func catchUp(for userID: String, since: Double, after cursor: Int64, limit: Int, token: String,
                        via http: SupabaseHTTP) async throws(SupabaseError) -> CatchUpPage {
        let query = "select=id,sender_id,payload,created_at&recipient_id=eq.\(userID)&created_at=gte.\(CommitTimestamp.format(since))"
            + "&id=gt.\(cursor)&order=id.asc&limit=\(limit)"
        let (rows, bytes) = try await SupabaseREST(http).select(GreenBoxRows.locations, query: query, token: token, as: GreenBoxRows.Location.self)
        var next = cursor
        let updates = rows.map { row in
            if let id = row.id { next = max(next, id) }
            return IncomingUpdate(sender: row.senderID, body: row.payload, id: row.id, createdAt: row.createdAt.flatMap(CommitTimestamp.parse))
        }
        return CatchUpPage(updates: updates, bytes: bytes, cursor: next)
    }

    // MARK: Retention (PRD §3.3)

    public func oldestUpdates(of userID: String, limit: Int, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [StoredUpdate] {
        try await stored("select=id,created_at&recipient_id=eq.\(userID)&order=created_at.asc&limit=\(limit)", token: token, via: http)
    }

    public func presentUpdates(_ ids: [Int64], of userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Set<Int64> {
        let list = ids.map(String.init).joined(separator: ",")
        let rows = try await SupabaseREST(http).select(GreenBoxRows.locations, query: "select=id&recipient_id=eq.\(userID)&id=in.(\(list))",
                                                       token: token, as: GreenBoxRows.Stored.self).rows
        return Set(rows.map(\.id))
    }

    public func oldestUpdates(limit: Int, serviceKey: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [StoredUpdate] {
        try await stored("select=id,created_at&order=created_at.asc&limit=\(limit)", token: serviceKey, via: http)
    }

    private func stored(_ query: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [StoredUpdate] {
        try await SupabaseREST(http).select(GreenBoxRows.locations, query: query, token: token, as: GreenBoxRows.Stored.self).rows.compactMap { row in
            guard let text = row.createdAt, let t = CommitTimestamp.parse(text) else { return nil }
            return StoredUpdate(id: row.id, createdAt: t, createdText: text)
        }
    }

    // MARK: Probes

    public func befriendForProbes(_ friend: Session, with others: [Session], via http: SupabaseHTTP) async throws(SupabaseError) {
        if pairing == .prd {
            for other in others {
                let id = try await requestFriendship(to: Invitee(userID: other.userID, email: other.email ?? ""), preference: "precise",
                                                     from: friend, via: http)
                try await acceptFriendship(id, preference: "precise", token: other.accessToken, via: http)
            }
            return
        }
        for other in others {
            try await befriend(FriendRequest(inviter: friend, invitee: other, inviterPreference: "precise", inviteePreference: "precise",
                                             pending: false), via: http)
        }
    }

    public func updateRequest(sender: String, recipient: String, body: String) -> AppRequest {
        AppRequest(method: "POST", path: "/rest/v1/\(GreenBoxRows.locations)", headers: [("Prefer", "return=minimal")],
                   fields: [("sender_id", sender), ("recipient_id", recipient), ("payload", body)])
    }
}
