import ConvoyCrypto
import ConvoyFormats
import ConvoyJSON
import ConvoySodium
import ConvoyWire
import Foundation

/// A team's own pairwise app, run from its declaration (`DeclaredAppSpec`, docs/apps.md): every table, column,
/// encoding and step is the file's; what the phone does with them (when it seals, sends, catches up, checks
/// retention) is the pairwise shape's, as for Green Box.
public struct DeclaredApp: PairwiseApp {
    public let spec: DeclaredAppSpec
    let plain: DeclaredPlaintext

    public var name: String { spec.name }

    public init(_ spec: DeclaredAppSpec) {
        self.spec = spec
        plain = DeclaredPlaintext(spec.plaintext)
    }

    // MARK: Keys

    /// The file's set-up steps (`setup:`), then the key published (an app that shares locations).
    public func finishSignUp(keys: BoxKeyPair, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) {
        var values = Self.me(session)
        for step in spec.setup { try await make(step, values: &values, token: session.accessToken, via: http) }
        try await publishKey(keys.publicKey, session: session, via: http)
    }

    /// Whether its phones share locations; an app of actions alone runs only its actions (`DeclaredAppSpec.sharesLocations`).
    public var sharesPositions: Bool { spec.sharesLocations }

    public var carriesBattery: Bool { plain.carriesBattery }

    public func publishKey(_ key: PublicKey, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) {
        guard spec.sharesLocations else { return }
        var values = Self.me(session)
        values["me.public_key"] = .string(spec.keys.encoding.encode(key.bytes))
        values["me.device"] = .string(UUID().uuidString.lowercased())
        try await make(spec.keys.publish, values: &values, token: session.accessToken, via: http)
    }

    public func hasPublishedKey(_ userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool {
        guard spec.sharesLocations else { return true }
        return try await !SupabaseREST(http).select(spec.keys.table, query: "select=\(spec.keys.owner)&\(spec.keys.owner)=eq.\(userID)&limit=1", token: token).isEmpty
    }

    public func publicKeys(of userIDs: [String], token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [String: PublicKey] {
        guard !userIDs.isEmpty else { return [:] }
        let k = spec.keys
        let rows: [JSONValue]
        if let lookup = k.lookup {
            var values: [String: JSONValue] = ["ids": .array(userIDs.map(JSONValue.string))]
            rows = try await make(lookup, values: &values, token: token, via: http)
        } else {
            let owners = userIDs.count == 1 ? "\(k.owner)=eq.\(userIDs[0])" : "\(k.owner)=in.(\(userIDs.joined(separator: ",")))"
            let order = k.newest.map { "&order=\($0).asc" } ?? ""
            rows = try await SupabaseREST(http).select(k.table, query: "select=\(k.owner),\(k.column)&\(owners)\(order)", token: token)
        }
        var keys: [String: PublicKey] = [:]
        for row in rows {
            guard let owner = row[k.owner]?.flatText, let text = row[k.column]?.string,
                  let bytes = try? k.encoding.decode(text), let key = try? PublicKey(bytes: bytes) else { continue }
            // Per device, rows come oldest first: the newest device is the one sealed to. Per user, the first.
            if keys[owner] == nil || k.perDevice { keys[owner] = key }
        }
        return keys
    }

    // MARK: Links

    public var pairsDuringRun: Bool { spec.links.duringRun }

    public var sharing: LinkSharing { spec.links.sharing }

    /// Served by a built-in app's embedded backend (`backend: {embedded: …}`), its links may use that backend's invite
    /// codes, whose lifetime `social.invite_ttl` sets; its own SQL issues none the embedded backend times.
    public var issuesInviteCodes: Bool { spec.serves.flatMap { Apps.make($0) }?.issuesInviteCodes ?? false }

    public func befriend(_ request: FriendRequest, via http: SupabaseHTTP) async throws(SupabaseError) {
        // Each step as the one who makes it (`me` its maker, `friend` the other); what a step saves, the later ones read.
        var values: [String: JSONValue] = [:]
        for (i, step) in spec.links.steps.enumerated() {
            if request.pending, i == spec.links.acceptIndex { return }
            let (me, friend, preference) = step.byInvitee ? (request.invitee, request.inviter, request.inviteePreference)
                : (request.inviter, request.invitee, request.inviterPreference)
            (values["me.email"], values["friend.email"]) = (nil, nil)  // the last maker's, if this one's are unknown
            values.merge(pairValues(me: me, friend: friend, preference: preference)) { _, new in new }
            try await make(step.write, values: &values, token: me.accessToken, via: http)
        }
    }

    private func pairValues(me: Session, friend: Session, preference: String) -> [String: JSONValue] {
        var v = Self.me(me)
        v["friend.id"] = .string(friend.userID)
        if let email = friend.email { v["friend.email"] = .string(email) }
        v["me.preference"] = .string(preference)
        return v
    }

    public func activeFriendships(token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> Int {
        let l = spec.links
        return try await SupabaseREST(http).select(l.table, query: "select=\(l.columns.status)&\(l.columns.status)=eq.\(l.active)", token: token).count
    }

    public func requestFriendship(to invitee: Invitee, preference: String, from session: Session,
                                  via http: SupabaseHTTP) async throws(SupabaseError) -> String {
        var values = Self.me(session)
        values["friend.id"] = .string(invitee.userID)
        values["friend.email"] = .string(invitee.email)
        values["me.preference"] = .string(preference)
        for step in spec.links.requestSteps { try await make(step.write, values: &values, token: session.accessToken, via: http) }
        guard let id = values["saved.link"]?.flatText else {
            throw SupabaseError(kind: .unexpectedResponse, message: "\(spec.file): the inviter's steps saved no link (save: {link: \(spec.links.columns.id)})")
        }
        return id
    }

    public func acceptFriendship(_ id: String, preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) {
        var values: [String: JSONValue] = ["saved.link": .string(id), "me.preference": .string(preference)]
        if case .string(let sub)? = UnverifiedJWT.claims(token)?["sub"] { values["me.id"] = .string(sub) }
        for step in spec.links.acceptSteps { try await make(step.write, values: &values, token: token, via: http) }
    }

    public func pendingRequests(to userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [PairingEvent] {
        let (l, c) = (spec.links, spec.links.columns)
        return try await SupabaseREST(http).select(l.table, query: "select=\(c.id),\(c.inviter)&\(c.invitee)=eq.\(userID)&\(c.status)=eq.\(l.pending)&order=\(c.id).asc",
                                                   token: token).compactMap { row in
            guard let id = row[c.id]?.flatText, let from = row[c.inviter]?.flatText else { return nil }
            return .requested(id: id, from: from)
        }
    }

    public func acceptedRequests(by userID: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> [PairingEvent] {
        let (l, c) = (spec.links, spec.links.columns)
        return try await SupabaseREST(http).select(l.table, query: "select=\(c.id),\(c.invitee)&\(c.inviter)=eq.\(userID)&\(c.status)=eq.\(l.active)&order=\(c.id).asc",
                                                   token: token).compactMap { row in
            guard let id = row[c.id]?.flatText, let by = row[c.invitee]?.flatText else { return nil }
            return .accepted(id: id, by: by)
        }
    }

    public func invite(preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) -> String {
        throw SupabaseError(kind: .unexpectedResponse, message: "\(spec.file): a declared app has no invitation after a reinstall (the scenario reader refuses migration:)")
    }

    public func accept(code: String, preference: String, token: String, via http: SupabaseHTTP) async throws(SupabaseError) {
        throw SupabaseError(kind: .unexpectedResponse, message: "\(spec.file): a declared app has no invitation after a reinstall (the scenario reader refuses migration:)")
    }

    public func befriendForProbes(_ friend: Session, with others: [Session], via http: SupabaseHTTP) async throws(SupabaseError) {
        for other in others {
            try await befriend(FriendRequest(inviter: friend, invitee: other, inviterPreference: "precise", inviteePreference: "precise",
                                             pending: false), via: http)
        }
    }
}
