import ConvoyCrypto
import ConvoyJSON
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation
import Synchronization

/// A team's own app of the group shape, run from its declaration (`DeclaredAppSpec.Group`, docs/apps.md, "A group
/// app"): groups created, joined and ended by the file's steps; each phone joins its group's private channel (the
/// file's topic), tracks the file's presence and broadcasts its plaintext to the whole group each tick. What the phone
/// does with them (when it shares, what it expects, how presence spreads) is the group shape's, as for Survale.
///
/// The broadcast carries the plaintext in the clear on the private channel (Realtime Authorization keeps strangers
/// out), as Survale's does: sealing one broadcast to each member is not declarable yet. The group shape's other
/// rooms (chat, media, an archive and its replay, direct messages, joining by request, leaving) are not declared
/// either: the scenario reader refuses the keys that would use them (`Reader.checkDeclaredGroup`), so the
/// requirements below that serve them are never reached by a run, and answer an error naming the file if they were.
public final class DeclaredGroupApp: GroupApp {
    /// The declaration, and its templated writes and actions (`DeclaredApp`'s, shared by both shapes).
    public let rows: DeclaredApp
    var spec: DeclaredAppSpec { rows.spec }
    var group: DeclaredAppSpec.Group { spec.group! }

    public var name: String { spec.name }

    /// Each user's group and whether it owns it, learnt in set-up.
    let members = Mutex([String: Member]())

    struct Member: Sendable {
        var group: String
        var owner: Bool
        var number: Int
        /// Its group's channel (`broadcast.topic` filled), named once at set-up.
        var topic: String
    }

    public init(_ spec: DeclaredAppSpec) {
        precondition(spec.group != nil, "a declared group app needs its groups: section")
        rows = DeclaredApp(spec)
    }

    // MARK: Accounts

    /// The file's set-up steps; a group app publishes no key (its broadcast is not sealed).
    public func finishSignUp(keys: BoxKeyPair, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) {
        var values = DeclaredApp.me(session)
        for step in spec.setup { try await rows.make(step, values: &values, token: session.accessToken, via: http) }
    }

    public func hasPublishedKey(_ userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool { true }

    public var carriesBattery: Bool { rows.carriesBattery }

    /// The plaintext travels in the clear on the private channel: the phone times sealing and opening as encoding.
    public var encrypts: Bool { false }

    // MARK: Groups

    /// The owner (`members[0]`) makes the create steps, which save the group's id; then each other member comes in by the
    /// join steps, made by the owner or by the member as each says.
    public func formGroup(_ members: [Session], joiningLater: Set<String>, number: Int, serviceKey: String?,
                          via http: SupabaseHTTP) async throws(SupabaseError) {
        guard let owner = members.first else { return }
        var values = DeclaredApp.me(owner)
        values["group.number"] = .number(String(number))
        for step in group.create {
            try await rows.make(step, values: &values, token: owner.accessToken, via: http)
            if let id = values["saved.group"] { values["group.id"] = id }
        }
        guard let id = values["saved.group"]?.flatText else {
            throw SupabaseError(kind: .unexpectedResponse, message: "\(spec.file): groups.create saved no group (save: {group: \(group.columns.id)})")
        }
        for member in members.dropFirst() where !joiningLater.contains(member.userID) {
            var shared: [String: JSONValue] = ["group.id": .string(id), "group.number": .number(String(number)), "owner.id": .string(owner.userID),
                                               "member.id": .string(member.userID)]
            if let email = member.email { shared["member.email"] = .string(email) }
            for step in group.join {
                let maker = step.byOwner ? owner : member
                shared["me.id"] = .string(maker.userID)
                shared["me.email"] = maker.email.map(JSONValue.string)
                try await rows.make(step.write, values: &shared, token: maker.accessToken, via: http)
            }
        }
        self.members.withLock { m in
            let topic = channel(of: id)
            for (i, s) in members.enumerated() { m[s.userID] = Member(group: id, owner: i == 0, number: number, topic: topic) }
        }
    }

    public func groupID(of userID: String) -> String? { members.withLock { $0[userID]?.group } }

    /// The owner's end steps; a member leaving is not declared (the scenario reader refuses `leave_rejoin`).
    public func leaveGroup(_ session: Session, owner: Bool, via http: SupabaseHTTP) async throws(SupabaseError) {
        guard owner else { throw undeclared("a member leaving its group") }
        guard let member = members.withLock({ $0[session.userID] }) else { return }
        var values = DeclaredApp.me(session)
        values["group.id"] = .string(member.group)
        values["group.number"] = .number(String(member.number))
        for step in group.end { try await rows.make(step, values: &values, token: session.accessToken, via: http) }
    }

    /// Each group's row read with the service key: ended once its `ended` column is set.
    public func groupEnds(serviceKey: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [String: GroupEnd] {
        let ids = Set(members.withLock { $0.values.map(\.group) }).sorted()
        let c = group.columns
        var out: [String: GroupEnd] = [:]
        for start in stride(from: 0, to: ids.count, by: 100) {
            let page = ids[start..<min(start + 100, ids.count)]
            let found = try await SupabaseREST(http).select(group.table, query: "select=\(c.owner),\(c.ended)&\(c.id)=in.(\(page.joined(separator: ",")))",
                                                            token: serviceKey)
            for row in found {
                guard let owner = row[c.owner]?.flatText else { continue }
                let ended = row[c.ended].flatMap { $0 == .null ? nil : $0 }
                out[owner] = GroupEnd(ended: ended != nil, byBackend: false, endedAt: ended?.string.flatMap(CommitTimestamp.parse))
            }
        }
        return out
    }

    // MARK: The broadcast

    /// The group's private channel: its broadcasts and presence, and its own row changing (its end).
    public func subscription(for userID: String) -> AppSubscription {
        let member = members.withLock { $0[userID] }
        let id = member?.group ?? "unknown"
        let ended = RealtimeClient.Binding(event: "UPDATE", table: group.table, filter: "\(group.columns.id)=eq.\(id)")
        return AppSubscription(topic: member?.topic ?? channel(of: id), bindings: [ended],
                               options: RealtimeClient.ChannelOptions(isPrivate: true, broadcastAck: true, presenceKey: userID),
                               tracksPresence: group.presence != nil)
    }

    /// Group `id`'s private channel, as Realtime names it (`realtime:` and the filled topic).
    private func channel(of id: String) -> String {
        let topic = (try? Template.fill(group.topic) { $0 == "group.id" ? id : nil }) ?? group.topic
        return topic.hasPrefix("realtime:") ? topic : "realtime:\(topic)"
    }

    public func subscriptions(for userID: String) -> [AppSubscription] { [subscription(for: userID)] }

    public func plaintext(of update: LocationPayload) -> LocationPayload { rows.plaintext(of: update) }

    /// The plaintext's JSON as the file's template writes it (broadcast in the clear: see the type's note).
    public func seal(_ update: LocationPayload, to recipient: PublicKey) throws(CryptoError) -> String {
        String(decoding: try rows.plain.bytes(update), as: UTF8.self)
    }

    public func sendToGroup(_ update: OutgoingUpdate, from session: Session, realtime: RealtimeClient?,
                            via http: SupabaseHTTP) async throws(SupabaseError) -> (bytes: Int, ref: String?) {
        guard let realtime, let member = members.withLock({ $0[session.userID] }) else { throw SupabaseError(kind: .notJoined, message: "no group channel") }
        guard let fix = JSONScanner.parse(update.body), case .object = fix else {
            throw SupabaseError(kind: .unexpectedResponse, message: "\(spec.file): the plaintext is not a JSON object")
        }
        let topic = member.topic
        guard let ref = realtime.broadcast(topic, event: group.event, payload: fix.setting(group.sender, to: .string(session.userID))) else {
            throw SupabaseError(kind: .notJoined, message: "\(topic) (group \(member.group)) is not joined")
        }
        // The frame as sent: topic, event, the payload with its envelope, refs.
        return (update.body.utf8.count + topic.utf8.count + group.event.utf8.count + 110, ref)
    }

    public func incoming(broadcast: RealtimeClient.Broadcast) -> Incoming {
        guard broadcast.event == group.event else { return .notMine }
        guard let sender = broadcast.payload[group.sender] else { return .malformed }
        return .update(IncomingUpdate(sender: sender, body: broadcast.json))
    }

    /// Its group's row updated with `ended` set: the group is over.
    public func incoming(_ change: RealtimeClient.Change) -> Incoming {
        guard change.table == group.table, change.type == "UPDATE" else { return .notMine }
        guard let ended = change.record[group.columns.ended], !ended.isEmpty, ended != "null" else { return .notMine }
        return .groupEnded
    }

    public func open(_ update: IncomingUpdate, with keys: BoxKeyPair) throws(CryptoError) -> LocationPayload {
        try rows.plain.read(Array(update.body.utf8))
    }

    public func presence(for userID: String) -> [String: String]? {
        guard let fields = group.presence else { return nil }
        var out: [String: String] = [:]
        for f in fields { out[f.key] = (try? Template.fill(f.value) { $0 == "me.id" ? userID : nil }) ?? f.value }
        return out
    }

    // MARK: Probes

    /// The friend and the attacker share a group; the victim has one of its own; the stranger is in none.
    public func formProbeCast(_ cast: ProbeCastSessions, serviceKey: String?, via http: SupabaseHTTP) async throws(SupabaseError) {
        let number = 900_000 + Int.random(in: 0..<90_000) * 10
        try await formGroup([cast.friend, cast.attacker], joiningLater: [], number: number, serviceKey: serviceKey, via: http)
        try await formGroup([cast.victim], joiningLater: [], number: number + 1, serviceKey: serviceKey, via: http)
    }

    /// `{{<role>.group}}`: the group of each party the cast placed in one.
    public func probeValues(roles: [String: String]) -> [String: String] {
        var out: [String: String] = [:]
        for (role, userID) in roles { if let id = groupID(of: userID) { out["\(role).group"] = id } }
        return out
    }

    // MARK: Not declared (refused by the scenario reader; see the type's note)

    private func undeclared(_ what: String) -> SupabaseError {
        SupabaseError(kind: .unexpectedResponse, message: "\(spec.file): \(what) is not something a declared group app has (docs/apps.md, \"A group app\")")
    }

    public func askToJoin(_ session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> String { throw undeclared("a join request") }
    public func joinDecision(_ id: String, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool? { throw undeclared("a join request") }
    public func approveJoin(_ id: String, owner session: Session, via http: SupabaseHTTP) async throws(SupabaseError) { throw undeclared("a join request") }
    public func pendingJoinRequests(owner session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> [String] { [] }
    public func directPartners(of userID: String) -> [String] { [] }
    public func directChannel(for userID: String, with partner: String) -> AppSubscription? { nil }
    public func sendDirect(_ message: GroupMessage, to userID: String, from session: Session, realtime: RealtimeClient?) throws(SupabaseError) -> Int {
        throw undeclared("a direct message")
    }
    public func missedMessages(for session: Session, since: Double, after cursor: Int64, limit: Int,
                               via http: SupabaseHTTP) async throws(SupabaseError) -> MissedMessages {
        MissedMessages(lines: [], bytes: 0, cursor: cursor)
    }
    public func sendMessage(_ message: GroupMessage, from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Int {
        throw undeclared("a chat message")
    }
    public var archiveEvery: Double? { nil }
    public func archive(_ fixes: [LocationPayload], from session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Int { 0 }
    public func replay(as session: Session, page: Int, via http: SupabaseHTTP) async throws(SupabaseError) -> ReplayLoad { ReplayLoad() }
    public func groupRemains(_ group: String, reader: String?, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> GroupRemains {
        throw undeclared("what a group leaves behind (retention)")
    }
    public var sendsMedia: Bool { false }
    public func uploadMedia(_ kind: MediaKind, bytes: [UInt8], seq: UInt64, from session: Session, via http: SupabaseHTTP,
                            progress: (@Sendable (HTTPProgress) -> Void)?) async throws(SupabaseError) -> MediaRef {
        throw undeclared("media")
    }
    public func fetchMedia(_ media: MediaRef, as session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Int { throw undeclared("media") }
}

extension AppProfile {
    /// The declaration behind an app declared in a file, of either shape; nil for a built-in app.
    public var declared: DeclaredApp? { (self as? DeclaredApp) ?? (self as? DeclaredGroupApp)?.rows }
}
