import ConvoyCrypto
import ConvoyJSON
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation
import Synchronization

/// Survale (survale-spec.md) on a Supabase backend: law-enforcement teams in
/// live operations. A group is an operation: set-up provisions its agency,
/// team and users with the service key (as an agency provisions accounts),
/// then the case agent (the group's owner) creates it, invites the others,
/// who accept, and starts it. Each phone joins the operation's private channel
/// `op_{id}_locations` (Realtime Authorization), tracks its presence, and
/// broadcasts its position every 3–5 s to the whole team at once; it hears of
/// the operation's end through `postgres_changes` on `operations` on the same
/// channel, and then stops. Positions are not end-to-end encrypted (the spec
/// has none): "sealing" is the broadcast's JSON. At the end of the run the
/// case agent ends the operation, unless the scenario abandons it to auto-end.
public final class SurvaleApp: GroupApp, RegisteredApp {
    static let appName = "survale"
    static func make(_ options: AppOptions) -> SurvaleApp { SurvaleApp() }

    public let name = "survale"

    /// The operation of each user and its callsign, learnt in set-up.
    let members = Mutex([String: Member]())

    struct Member: Sendable {
        var operation: String
        var callsign: String
        var caseAgent = false
    }

    /// How often positions are appended to the archive, seconds (30: the app's; tests shorten it).
    let archiveInterval: Double

    public init(archiveEvery: Double = 30) { archiveInterval = archiveEvery }

    static let modes: [(option: String, values: [String])] = []

    // MARK: Groups


    /// Provisions group `number`'s agency, team and users (service key), then its case agent creates the
    /// operation, invites every member but those `joiningLater` (they ask to join once it runs), each
    /// accepts, and the case agent starts it.
    public func formGroup(_ group: [Session], joiningLater: Set<String>, number: Int, serviceKey: String?,
                          via http: SupabaseHTTP) async throws(SupabaseError) {
        guard let serviceKey else {
            throw SupabaseError(kind: .unexpectedResponse,
                                message: "Survale's users are provisioned by their agency: the run needs the project's service key (--service-key)")
        }
        guard let owner = group.first else { return }
        let rest = SupabaseREST(http)
        let agency = try await Self.created(rest, "agencies", ["name": .string("Convoy agency \(number)")], token: serviceKey)
        let team = try await Self.created(rest, "teams", ["name": .string("Team \(number)"), "agency_id": .string(agency)], token: serviceKey)
        let callsigns = group.indices.map { i in i == 0 ? "CA-\(number)" : "U-\(number)-\(i)" }
        let users: [JSONValue] = zip(group, callsigns).map { s, callsign in
            ["id": .string(s.userID), "team_id": .string(team), "agency_id": .string(agency), "callsign": .string(callsign)]
        }
        _ = try await rest.insertReturning("users", objects: .array(users), token: serviceKey)
        let created = try await rest.rpc("create_operation", ["name": .string("Operation \(number)"), "incident_number": .string("CVY-\(number)")],
                                         token: owner.accessToken)
        guard let operation = created["id"]?.string else {
            throw SupabaseError(kind: .unexpectedResponse, message: "create_operation: no id")
        }
        let invitees = group.dropFirst().filter { !joiningLater.contains($0.userID) }
        if !invitees.isEmpty {
            let invites: [JSONValue] = invitees.map {
                ["operation_id": .string(operation), "invitee_id": .string($0.userID), "invited_by": .string(owner.userID)]
            }
            let rows = try await rest.insertReturning("operation_invites", objects: .array(invites), token: owner.accessToken)
            var inviteOf: [String: JSONValue] = [:]
            for row in rows { if let who = row["invitee_id"]?.string, let id = row["id"] { inviteOf[who] = id } }
            for member in invitees {
                guard let id = inviteOf[member.userID] else {
                    throw SupabaseError(kind: .unexpectedResponse, message: "operation_invites: no invite for \(member.userID)")
                }
                _ = try await rest.rpc("respond_to_invite", ["invite_id": id, "accept": true], token: member.accessToken)
            }
        }
        _ = try await rest.rpc("start_operation", ["operation_id": .string(operation)], token: owner.accessToken)
        members.withLock { m in
            for (i, (s, callsign)) in zip(group, callsigns).enumerated() {
                m[s.userID] = Member(operation: operation, callsign: callsign, caseAgent: i == 0)
            }
        }
    }

    /// A row inserted with `token`, its `id`.
    static func created(_ rest: SupabaseREST, _ table: String, _ row: JSONValue, token: String) async throws(SupabaseError) -> String {
        guard let id = try await rest.insertReturning(table, objects: row, token: token).first?["id"]?.string else {
            throw SupabaseError(kind: .unexpectedResponse, message: "POST \(table): no id in the response")
        }
        return id
    }

    /// The operation `userID` is in (set-up made it).
    func operation(of userID: String) -> String? { members.withLock { $0[userID]?.operation } }

    public func sendToGroup(_ update: OutgoingUpdate, from session: Session, realtime: RealtimeClient?,
                            via http: SupabaseHTTP) async throws(SupabaseError) -> (bytes: Int, ref: String?) {
        guard let operation = operation(of: session.userID), let realtime else {
            throw SupabaseError(kind: .notJoined, message: "no operation channel")
        }
        guard let position = JSONScanner.parse(update.body), case .object = position else {
            throw SupabaseError(kind: .unexpectedResponse, message: "position payload is not a JSON object")
        }
        let payload = position.setting("user_id", to: .string(session.userID))
        let topic = Self.locations(operation)
        guard let ref = realtime.broadcast(topic, event: Self.positionEvent, payload: payload) else {
            throw SupabaseError(kind: .notJoined, message: "\(topic) is not joined")
        }
        // The frame as sent: topic, event, the payload with its envelope, refs.
        return (update.body.utf8.count + topic.utf8.count + 120, ref)
    }

    public func incoming(broadcast: RealtimeClient.Broadcast) -> Incoming {
        guard broadcast.event == Self.positionEvent else { return broadcast.event == Self.directEvent ? direct(broadcast) : .notMine }
        guard let sender = broadcast.payload["user_id"] else { return .malformed }
        return .update(IncomingUpdate(sender: sender, body: broadcast.json))
    }

    public func presence(for userID: String) -> [String: String]? {
        guard let callsign = members.withLock({ $0[userID]?.callsign }) else { return nil }
        return ["user_id": userID, "callsign": callsign, "vehicle": "sedan"]
    }

    /// The case agent ends the operation; a member leaves it (`leave_operation`), and may ask to join again.
    public func leaveGroup(_ session: Session, owner: Bool, via http: SupabaseHTTP) async throws(SupabaseError) {
        guard let operation = operation(of: session.userID) else { return }
        _ = try await SupabaseREST(http).rpc(owner ? "end_operation" : "leave_operation", ["operation_id": .string(operation)], token: session.accessToken)
    }

    public func groupEnds(serviceKey: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [String: GroupEnd] {
        let operations = Set(members.withLock { $0.values.map(\.operation) }).sorted()
        guard !operations.isEmpty else { return [:] }
        var out: [String: GroupEnd] = [:]
        // A page at a time: a URL of a few thousand ids stays short.
        for start in stride(from: 0, to: operations.count, by: 100) {
            let page = operations[start..<min(start + 100, operations.count)]
            let rows = try await SupabaseREST(http).select("operations", query: "select=case_agent_id,status,ended_at,end_reason&id=in.(\(page.joined(separator: ",")))",
                                                           token: serviceKey)
            for row in rows {
                guard let owner = row["case_agent_id"]?.string else { continue }
                out[owner] = GroupEnd(ended: row["status"]?.string == "ended", byBackend: row["end_reason"]?.string == "auto_end",
                                      endedAt: row["ended_at"]?.string.flatMap(CommitTimestamp.parse))
            }
        }
        return out
    }

    static let positionEvent = "position"
    static func locations(_ operation: String) -> String { "realtime:op_\(operation)_locations" }

    // MARK: Sharing and receiving

    public func plaintext(of update: LocationPayload) -> LocationPayload { update }

    /// Positions travel in the clear (the spec encrypts nothing end to end): the phone times `seal` and `open` as `encode`
    /// and `decode`.
    public var encrypts: Bool { false }

    /// The broadcast's position as JSON: no encryption in Survale.
    public func seal(_ update: LocationPayload, to recipient: PublicKey) throws(CryptoError) -> String {
        String(decoding: try update.jsonBytes(), as: UTF8.self)
    }

    /// The operation's private locations channel: its broadcasts, presence (keyed by user id), and
    /// the operation's own row changing (its end).
    public func subscription(for userID: String) -> AppSubscription {
        let operation = operation(of: userID) ?? "unknown"
        var bindings = [RealtimeClient.Binding(event: "UPDATE", table: "operations", filter: "id=eq.\(operation)")]
        // The case agent hears join requests to its operation (RLS: only the requester and the case agent read them).
        if members.withLock({ $0[userID]?.caseAgent == true }) {
            bindings.append(RealtimeClient.Binding(event: "INSERT", table: "join_requests", filter: "operation_id=eq.\(operation)"))
        }
        return AppSubscription(topic: Self.locations(operation), bindings: bindings,
                               options: RealtimeClient.ChannelOptions(isPrivate: true, broadcastAck: true, presenceKey: userID),
                               tracksPresence: true)
    }

    /// Both of the operation's private channels: locations, and chat (`op_messages` inserted for the operation).
    public func subscriptions(for userID: String) -> [AppSubscription] {
        let operation = operation(of: userID) ?? "unknown"
        return [subscription(for: userID),
                AppSubscription(topic: "realtime:op_\(operation)_chat",
                                bindings: [RealtimeClient.Binding(event: "INSERT", table: "op_messages", filter: "operation_id=eq.\(operation)")],
                                options: RealtimeClient.ChannelOptions(isPrivate: true), carriesMessages: true)]
    }

    public func incoming(_ change: RealtimeClient.Change) -> Incoming {
        switch change.table {
        case "operations": return change.record["status"] == "ended" ? .groupEnded : .notMine
        case "join_requests":
            guard let id = change.record["id"] else { return .malformed }
            return change.record["status"] == "pending" ? .joinRequest(id) : .notMine
        case "op_messages":
            guard let sender = change.record["sender_id"], let body = change.record["body"],
                  let message = Self.message(body: body, mediaPath: change.record["media_path"])
            else { return .malformed }
            return .groupMessage(sender: sender, message)
        default: return .notMine
        }
    }

    /// A chat line as the phones write it in `op_messages.body`: Convoy's seq and send time with the text.
    /// A line with media also says what it is and its size (the object is `op_messages.media_path`).
    struct ChatLine: Codable {
        var seq: UInt64
        var sent_ns: Int64
        var text: String
        var kind: String?
        var bytes: Int?
    }

    /// Positions are appended to `locations_archive` for replay every 30 s (spec §8).
    public var archiveEvery: Double? { archiveInterval }

    /// One bulk insert into `locations_archive`, as the user, `return=minimal`.
    public func archive(_ fixes: [LocationPayload], from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Int {
        guard let operation = operation(of: session.userID), !fixes.isEmpty else { return 0 }
        let rows: [JSONValue] = fixes.map { (f: LocationPayload) -> JSONValue in
            let heading: JSONValue = f.heading.map { JSONValue($0) } ?? .null
            let speed: JSONValue = f.speed.map { JSONValue($0) } ?? .null
            return ["operation_id": .string(operation), "user_id": .string(session.userID), "lat": JSONValue(f.lat), "lon": JSONValue(f.lon),
                    "accuracy": JSONValue(f.acc), "heading": heading, "speed": speed,
                    "fix": f.reduced ? "reduced" : "gps", "recorded_at": .string(CommitTimestamp.format(f.ts))]
        }
        let body = Array(JSONValue.array(rows).text.utf8)
        try await SupabaseREST(http).insert("locations_archive", json: body, token: session.accessToken)
        return body.count
    }

    /// A chat line in `op_messages`, as the sender, `return=minimal`.
    public func sendMessage(_ message: GroupMessage, from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Int {
        guard let operation = operation(of: session.userID) else { throw SupabaseError(kind: .notJoined, message: "no operation") }
        let line = ChatLine(seq: message.seq, sent_ns: message.sentNanos, text: message.text, kind: message.media?.kind.rawValue,
                            bytes: message.media?.bytes)
        let body = String(decoding: (try? JSONEncoder().encode(line)) ?? Data(), as: UTF8.self)
        var fields: [String: JSONValue] = ["operation_id": .string(operation), "sender_id": .string(session.userID), "body": .string(body)]
        if let media = message.media { fields["media_path"] = .string(media.location) }
        let row = Array(JSONValue(fields).text.utf8)
        try await SupabaseREST(http).insert("op_messages", json: row, token: session.accessToken)
        return row.count
    }

    public func open(_ update: IncomingUpdate, with keys: BoxKeyPair) throws(CryptoError) -> LocationPayload {
        try LocationPayload(jsonBytes: Array(update.body.utf8))
    }
}
