import ConvoyTime
import Foundation
import Testing
@testable import ConvoyServer

/// The two stores against each other (issue 49, item 5): a seeded stream of PostgREST requests — selects with filters,
/// orders, limits and embeds (which neither store serves), inserts and bulk inserts with uneven keys, upserts, updates
/// (empty ones too), deletes, RPCs with null, missing and extra arguments, odd literals, `Prefer` variants — sent as
/// several users, as anon and with a forged token, to `convoy serve` on SQLite and on PostgreSQL alike. Each answer
/// must agree (status, and the error's code or the rows), and so must every table after each request (read as the
/// service role) and what each user heard over Realtime. Realtime's channels are in the stream too: joins (public and
/// private), presence tracks, broadcasts, leaves and a fresh token, on Green Box's rooms and on Survale's operation and
/// direct-message channels, whose Realtime Authorization each store decides from the app's policies; each reply must
/// agree, and so must what every actor heard on its channels (broadcasts, presence states and diffs, closes). What the
/// stores generate themselves (identity ids, which PostgreSQL's sequence also spends on a refused insert; times; invite
/// codes) is compared by its place, not its value.
///
/// `make test` runs a short seed; `CONVOY_DIFF_STEPS` and `CONVOY_DIFF_SEED` run longer (the nightly). A failure names
/// the seed and the step, and prints both answers: rerun with that seed to reproduce it.
@Suite(.serialized) struct StoreDifferentialTests {
    static let environment = ProcessInfo.processInfo.environment
    static let seed = environment["CONVOY_DIFF_SEED"].flatMap(UInt64.init) ?? 49
    static let steps = environment["CONVOY_DIFF_STEPS"].flatMap(Int.init) ?? 150
    static let traces = environment["CONVOY_DIFF_TRACE"] != nil

    @Test(arguments: [false, true]) func greenBoxAnswersAlikeOnBothStores(strict: Bool) async throws {
        var generator = GreenBoxRequests(seed: Self.seed &+ (strict ? 1 : 0))
        try await Self.compare(.greenBox(strict: strict), label: strict ? "green box, strict policies" : "green box, prd policies") { generator.next() }
    }

    @Test func survaleAnswersAlikeOnBothStores() async throws {
        var generator = SurvaleRequests(seed: Self.seed &+ 2)
        try await Self.compare(.survale, label: "survale") { generator.next() }
    }

    /// `steps` requests from `next`, each sent to both stores and compared, then what each user heard.
    static func compare(_ app: App, label: String, next: () -> Request) async throws {
        try #require(PostgresTestCluster.enabled, "the differential test needs the PostgreSQL test cluster (make test starts one)")
        let sides = [try await Side(.sqlite, app), try await Side(.postgres, app)]
        var disagreements: [String] = []
        for step in 0..<Self.steps {
            let request = next()
            var answers: [Answer] = []
            for side in sides { answers.append(try await side.send(request)) }
            if Self.traces { print("step \(step) \(request) → \(answers[0])") }
            if answers[0] != answers[1] {
                disagreements.append("step \(step) \(request): sqlite \(answers[0]) | postgres \(answers[1])")
            }
            if request.method != "GET", !Request.channelMethods.contains(request.method) {
                let tables = [try await sides[0].snapshot(), try await sides[1].snapshot()]
                if tables[0] != tables[1] {
                    disagreements.append("step \(step) \(request): the tables differ after it:\n  sqlite   \(tables[0])\n  postgres \(tables[1])")
                }
            }
            if disagreements.count >= 5 { break }
        }
        // What each user heard over Realtime: a last row each user may read, heard by all, closes each one's stream.
        let heard = [try await sides[0].heard(), try await sides[1].heard()]
        for (user, (a, b)) in zip(heard[0].indices, zip(heard[0], heard[1])) where a != b {
            var onlyA = a, onlyB = b
            for event in b { if let i = onlyA.firstIndex(of: event) { onlyA.remove(at: i) } }
            for event in a { if let i = onlyB.firstIndex(of: event) { onlyB.remove(at: i) } }
            disagreements.append("U\(user) heard only on sqlite \(onlyA), only on postgres \(onlyB)")
        }
        let onChannels = [try await sides[0].heardOnChannels(), try await sides[1].heardOnChannels()]
        for (actor, a) in onChannels[0] where a != onChannels[1][actor] {
            disagreements.append("\(actor) heard on its channels, on sqlite \(a), on postgres \(onChannels[1][actor] ?? [])")
        }
        #expect(disagreements.isEmpty, "seed \(Self.seed), \(label):\n\(disagreements.joined(separator: "\n"))")
        // It tested something: requests were refused and went through, for several reasons, and users heard changes.
        let statuses = await sides[0].statuses
        #expect(Set(statuses.filter { $0 >= 400 }).count >= 3 && statuses.filter { $0 < 300 }.count * 5 >= statuses.count,
                "\(label): \(statuses.sorted())")
        #expect(heard[0].contains { !$0.isEmpty }, "\(label): no user heard a change")
        // And on the channels: joins let in and refused, and broadcasts or presence heard.
        let joins = await sides[0].joins
        #expect(joins.ok > 0 && joins.refused > 0, "\(label): joins \(joins)")
        #expect(onChannels[0].values.contains { $0.contains { $0.hasPrefix("broadcast") || $0.hasPrefix("presence_diff") } },
                "\(label): nothing heard on a channel: \(onChannels[0])")
        for side in sides { await side.stop() }
    }

    /// The apps compared, each with its users and the rows every store starts with.
    enum App: Sendable {
        case greenBox(strict: Bool)
        case survale

        var tables: [String] {
            switch self {
            case .greenBox: GreenBoxRequests.tables.map(\.name)
            case .survale: SurvaleRequests.tables.map(\.name)
            }
        }
    }

    /// One request, its user and its text with placeholders (`{{U0}}`, `{{U0:braced}}`, `{{CODE0}}`) each store fills in.
    struct Request: CustomStringConvertible {
        enum Actor: Hashable { case user(Int), anon, forged, service }
        var actor: Actor
        var method: String
        var path: String
        var body: String?
        var prefer: String?

        var description: String { "\(actor) \(method) \(path)\(prefer.map { " Prefer: \($0)" } ?? "")\(body.map { " \($0)" } ?? "")" }

        /// What is sent on a channel (its `path` the topic without `realtime:`, its `body` the payload's JSON), not to REST.
        static let channelMethods: Set<String> = ["JOIN", "JOIN-PRIVATE", "TRACK", "UNTRACK", "BROADCAST", "LEAVE", "TOKEN"]
        static let actors: [Actor] = (0..<4).map(Actor.user) + [.anon, .forged, .service]
    }

    /// What a store answered, as comparable: its status, and its error's code or its body normalized.
    struct Answer: Equatable, CustomStringConvertible {
        var status: Int
        var content: String
        var description: String { "\(status) \(content)" }
    }

    /// One store's server, its users (the same four on each, by place), their Realtime clients and what it generated.
    actor Side {
        let s: TestServer
        let store: TestStore
        var users: [TestServer.User] = []
        var clients: [PhoenixTestClient] = []
        var codes: [String] = []
        var statuses: [Int] = []
        var forged = ""
        /// Each actor's own Realtime connection for the channel requests, and the topics it is on.
        var channelClients: [Request.Actor: PhoenixTestClient] = [:]
        var onTopics: [Request.Actor: Set<String>] = [:]
        var joins = (ok: 0, refused: 0)

        /// Placeholders (`{{AG:A}}`, `{{V0}}`, `{{N0}}`) and this store's values for them: set up, or learned from its answers
        /// in the order they came (the same on both stores while their answers agree).
        var symbols: [String: String] = [:]
        var learned = (uuids: 0, numbers: 0)
        /// Learned identity ids, by place: the table they were learned from, and the value (a number names a row only
        /// within its table, and each store's sequences run apart).
        var numbers: [(table: String, value: String)] = []
        let app: App

        init(_ store: TestStore, _ app: App) async throws {
            self.store = store
            self.app = app
            switch app {
            case .greenBox(let strict):
                s = try await TestServer(store: store) { $0.strictPolicies = strict }
                for i in 0..<GreenBoxRequests.users {
                    let u = try await s.signUp(withProfile: false)
                    let row = try await s.request("POST", "/rest/v1/users", body: ["id": u.id, "public_key": "key-\(i)"], token: u.token)
                    #expect(row.status == 201)
                    users.append(u)
                }
            case .survale:
                s = try await TestServer(store: store) { $0.app = "survale" }
                let service = s.keys.serviceRoleKey
                func insert(_ table: String, _ row: [String: String]) async throws -> String {
                    let r = try await s.request("POST", "/rest/v1/\(table)", body: row, token: service, apikey: .some(service),
                                                headers: ["Prefer": "return=representation"])
                    return try #require(r.rows.first?["id"] as? String, "\(table): \(String(decoding: r.body, as: UTF8.self))")
                }
                for agency in ["A", "B"] { symbols["{{AG:\(agency)}}"] = try await insert("agencies", ["name": "Agency \(agency)"]) }
                for (team, agency) in SurvaleRequests.teams {
                    symbols["{{TM:\(team)}}"] = try await insert("teams", ["name": team, "agency_id": symbols["{{AG:\(agency)}}"]!])
                }
                for (i, team) in SurvaleRequests.userTeams.enumerated() {
                    let u = try await s.signUp(withProfile: false)
                    let agency = SurvaleRequests.teams.first { $0.team == team }!.agency
                    _ = try await insert("users", ["id": u.id, "team_id": symbols["{{TM:\(team)}}"]!, "agency_id": symbols["{{AG:\(agency)}}"]!,
                                                   "callsign": "C-\(i)"])
                    users.append(u)
                }
                // An active operation of team A1 from the start, U0 its case agent and U1 a member, so that its private
                // channels have members to let in from the first request (`{{OP}}`).
                let op = try await insert("operations", ["agency_id": symbols["{{AG:A}}"]!, "team_id": symbols["{{TM:A1}}"]!,
                                                         "case_agent_id": users[0].id, "name": "Harbor", "status": "active"])
                symbols["{{OP}}"] = op
                for (i, role) in [(0, "case_agent"), (1, "member")] {
                    let r = try await s.request("POST", "/rest/v1/operation_members", body: ["operation_id": op, "user_id": users[i].id, "role": role],
                                                token: service, apikey: .some(service))
                    #expect(r.status == 201)
                }
            }
            for u in users {
                let client = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey)
                let joined = try await client.join("realtime:diff", token: u.token, changes: app.tables.map {
                    ["event": "*", "schema": "public", "table": $0]
                })
                #expect(StoreAgreementTests.status(joined) == "ok")
                clients.append(client)
            }
            // A token for U0 signed with a secret the server does not have.
            let other = await TokenService(secret: "not-the-servers-secret-not-the-servers", clock: SystemClock(), issuer: "convoy", ttl: 3600)
            forged = try await other.accessToken(userID: users[0].id, email: users[0].email, sessionID: UUID().uuidString, anonymous: false).token
            for actor in Request.actors { channelClients[actor] = try await PhoenixTestClient(url: s.keys.url, apikey: s.keys.anonKey) }
        }

        /// The token `actor` sends (anon: none, so the connection's anon key).
        func token(_ actor: Request.Actor) -> String? {
            switch actor {
            case .user(let i): users[i].token
            case .anon: nil
            case .forged: forged
            case .service: s.keys.serviceRoleKey
            }
        }

        /// A channel request, sent on the actor's own connection. Each waits for its reply, or for a heartbeat's round
        /// trip where the server sends none (a broadcast it drops, a token that keeps the channel), so that everything
        /// it made the server send to others is on its way before the next request.
        func sendOnChannel(_ r: Request) async throws -> Answer {
            let client = channelClients[r.actor]!
            let topic = "realtime:" + fill(r.path)
            func payload() -> Any { r.body.flatMap { try? JSONSerialization.jsonObject(with: Data(fill($0).utf8), options: .fragmentsAllowed) } ?? [:] }
            func answer(_ reply: [String: Any]?) -> Answer {
                guard let p = reply?["payload"] as? [String: Any] else { return Answer(status: 0, content: "no reply") }
                let reason = (p["response"] as? [String: Any])?["reason"] as? String ?? ""
                return Answer(status: p["status"] as? String == "ok" ? 200 : 400, content: unfill(reason))
            }
            switch r.method {
            case "JOIN", "JOIN-PRIVATE":
                // Joined already: left first, as a client that joins again does.
                if onTopics[r.actor, default: []].contains(topic) { _ = try await leave(topic, on: r.actor) }
                let reply = try await client.join(topic, token: token(r.actor), ack: true, presenceKey: "\(r.actor)", isPrivate: r.method == "JOIN-PRIVATE")
                let a = answer(reply)
                if a.status == 200 { onTopics[r.actor, default: []].insert(topic); joins.ok += 1 } else { joins.refused += 1 }
                return a
            case "TRACK", "UNTRACK":
                let event = r.method.lowercased()
                return answer(try await client.reply(to: client.send(topic, "presence", ["type": "presence", "event": event, "payload": payload()])))
            case "BROADCAST":
                var body = payload() as? [String: Any] ?? [:]
                body["type"] = "broadcast"
                return answer(try await client.answer(to: client.send(topic, "broadcast", body)))
            case "LEAVE":
                return answer(try await leave(topic, on: r.actor))
            default:
                // A fresh token: a private channel's permissions are decided again, and one it may no longer read is closed.
                let ref = client.send(topic, "access_token", ["access_token": token(r.actor) ?? s.keys.anonKey])
                if let refused = try await client.answer(to: ref) { return answer(refused) }
                let closed = await Self.takeClose(topic, from: client)
                if closed { onTopics[r.actor, default: []].remove(topic) }
                return Answer(status: 200, content: closed ? "closed" : "kept")
            }
        }

        /// `actor` leaves `topic`: the reply, with the close that follows it taken (it is the leave's, not a later request's).
        func leave(_ topic: String, on actor: Request.Actor) async throws -> [String: Any] {
            let client = channelClients[actor]!
            onTopics[actor, default: []].remove(topic)
            let reply = try await client.reply(to: client.send(topic, "phx_leave"))
            try await client.sync()
            _ = await Self.takeClose(topic, from: client)
            return reply
        }

        /// Whether a close of `topic` had come, taking it.
        static func takeClose(_ topic: String, from client: PhoenixTestClient) async -> Bool {
            await client.inbox.take { $0["topic"] as? String == topic && $0["event"] as? String == "phx_close" } != nil
        }

        /// What each actor heard on its channels, after a heartbeat's round trip on each: broadcasts, presence states
        /// and diffs (keys and metas, without the server's `phx_ref`) and system messages, each with its topic, sorted.
        func heardOnChannels() async throws -> [Request.Actor: [String]] {
            var out: [Request.Actor: [String]] = [:]
            for actor in Request.actors {
                let client = channelClients[actor]!
                try await client.sync()
                var events: [String] = []
                for frame in await client.inbox.all() {
                    let f = PhoenixTestClient.Inbox.decode(frame)
                    guard let event = f["event"] as? String, event != "phx_reply" else { continue }
                    var payload = f["payload"] as? [String: Any] ?? [:]
                    payload.removeValue(forKey: "ref")
                    let text = normalized(Self.withoutRefs(payload), table: "")
                    events.append("\(event) \(unfill(f["topic"] as? String ?? "")) \(unfill(text))")
                }
                out[actor] = events.sorted()
            }
            return out
        }

        /// A presence payload without the refs the server makes (`phx_ref`, `phx_ref_prev`).
        static func withoutRefs(_ v: Any) -> Any {
            switch v {
            case let o as [String: Any]: o.filter { !$0.key.hasPrefix("phx_ref") }.mapValues(withoutRefs)
            case let a as [Any]: a.map(withoutRefs)
            default: v
            }
        }

        /// `text` with this store's values put back as their places (a topic, a reason naming one).
        func unfill(_ text: String) -> String {
            var out = text
            for i in users.indices {
                for j in users.indices where users[i].id < users[j].id {
                    let (a, b) = (min(i, j), max(i, j))
                    out = out.replacingOccurrences(of: users[i].id + "_" + users[j].id, with: "DM(U\(a),U\(b))")
                    out = out.replacingOccurrences(of: users[j].id + "_" + users[i].id, with: "DMR(U\(a),U\(b))")
                }
            }
            for (i, u) in users.enumerated() { out = out.replacingOccurrences(of: u.id, with: "U\(i)") }
            for (placeholder, value) in symbols { out = out.replacingOccurrences(of: value, with: placeholder) }
            return out
        }

        func stop() async { await s.stop() }

        /// `text` with this store's values for the placeholders (in a URL, braces percent-encoded).
        func fill(_ text: String, url: Bool = false) -> String {
            var out = text
            let (open, close) = url ? ("%7B", "%7D") : ("{", "}")
            // `{{DM:i:j}}`: the two users' ids in the order a direct-message channel's name takes them (the smaller first);
            // `{{DMR:i:j}}` the other way round.
            for i in users.indices {
                for j in users.indices {
                    let pair = [users[i].id, users[j].id].sorted()
                    out = out.replacingOccurrences(of: "{{DM:\(i):\(j)}}", with: pair.joined(separator: "_"))
                    out = out.replacingOccurrences(of: "{{DMR:\(i):\(j)}}", with: pair.reversed().joined(separator: "_"))
                }
            }
            for (i, u) in users.enumerated() {
                out = out.replacingOccurrences(of: "{{U\(i):braced}}", with: open + u.id.replacingOccurrences(of: "-", with: "").uppercased() + close)
                out = out.replacingOccurrences(of: "{{U\(i)}}", with: u.id)
            }
            for i in 0..<GreenBoxRequests.codes {
                out = out.replacingOccurrences(of: "{{CODE\(i)}}", with: i < codes.count ? codes[i] : "NOSUCH\(i)0")
            }
            for (placeholder, value) in symbols { out = out.replacingOccurrences(of: placeholder, with: value) }
            // Not learned yet (on either store alike): a value that finds nothing.
            // `{{N:table:k}}`: the k-th id learned from that table (a number names a row only within its table).
            for table in Set(numbers.map(\.table)) {
                for (k, n) in numbers.filter({ $0.table == table }).enumerated() {
                    out = out.replacingOccurrences(of: "{{N:\(table):\(k)}}", with: n.value)
                }
            }
            // Not learned yet (on either store alike): a value that finds nothing.
            while let open = out.range(of: "{{N:"), let close = out.range(of: "}}", range: open.upperBound..<out.endIndex) {
                out.replaceSubrange(open.lowerBound..<close.upperBound, with: "999999")
            }
            for i in 0..<SurvaleRequests.learnedKept {
                out = out.replacingOccurrences(of: "{{V\(i)}}", with: "00000000-0000-4000-8000-00000000000\(i % 10)")
            }
            return out
        }

        func send(_ r: Request) async throws -> Answer {
            if Request.channelMethods.contains(r.method) { return try await sendOnChannel(r) }
            let reply = try await s.request(r.method, fill(r.path, url: true), rawBody: r.body.map { Data(fill($0).utf8) }, token: token(r.actor),
                                            headers: r.prefer.map { ["Prefer": $0] } ?? [:])
            statuses.append(reply.status)
            if reply.status >= 400 { return Answer(status: reply.status, content: reply.code ?? "no code") }
            if r.path.hasPrefix("/rest/v1/rpc/create_invite"), let code = reply.object["code"] as? String { codes.append(code) }
            // Which rows a limit keeps is the store's where the order leaves ties or orders what each store generated (a
            // code): how many it kept is the answer.
            if r.path.contains("limit=") { return Answer(status: reply.status, content: "\(reply.rows.count) rows") }
            let table = Self.table(of: r.path)
            learn(reply.json, table: table)
            return Answer(status: reply.status, content: normalized(reply.json, table: table))
        }

        /// The `id` of a one-row answer, when the store made it: a place to name it by (`{{V0}}` a uuid, `{{N0}}` a number).
        /// The table a path reads or writes (`rpc/<name>` for an RPC).
        static func table(of path: String) -> String {
            String(path.dropFirst("/rest/v1/".count).prefix { $0 != "?" })
        }

        func learn(_ json: Any?, table: String) {
            let row = (json as? [String: Any]) ?? ((json as? [[String: Any]]).flatMap { $0.count == 1 ? $0[0] : nil })
            guard let id = row?["id"] else { return }
            let text = "\(id)"
            if id is String {
                guard !symbols.values.contains(text), !users.contains(where: { $0.id == text }) else { return }
                symbols["{{V\(learned.uuids)}}"] = text
                learned.uuids += 1
            } else if id is NSNumber, !numbers.contains(where: { $0 == (table, text) }) {
                numbers.append((table, text))
            }
        }

        /// Every table as the service role reads it, normalized.
        func snapshot() async throws -> String {
            var out: [String] = []
            for table in app.tables {
                let r = try await s.request("GET", "/rest/v1/\(table)?select=*", token: s.keys.serviceRoleKey)
                out.append("\(table): \(normalized(r.json, table: table))")
            }
            return out.joined(separator: "; ")
        }

        /// What each user heard, after a last row that every user may read (a new user's profile) reached them all.
        func heard() async throws -> [[String]] {
            // Green Box: a new user's profile, which every user reads. Survale: a new member of each agency.
            var last: Set<String> = []
            switch app {
            case .greenBox: last.insert(try await s.signUp().id)
            case .survale:
                let service = s.keys.serviceRoleKey
                for (agency, team) in [("A", "A1"), ("B", "B1")] {
                    let u = try await s.signUp(withProfile: false)
                    _ = try await s.request("POST", "/rest/v1/users", body: ["id": u.id, "team_id": symbols["{{TM:\(team)}}"]!,
                                                                            "agency_id": symbols["{{AG:\(agency)}}"]!, "callsign": "last"],
                                            token: service, apikey: .some(service))
                    last.insert(u.id)
                }
            }
            let markers = last
            var out: [[String]] = []
            for client in clients {
                _ = try await client.next { f in
                    guard f["event"] as? String == "postgres_changes", let data = (f["payload"] as? [String: Any])?["data"] as? [String: Any] else { return false }
                    return ((data["record"] as? [String: Any])?["id"] as? String).map(markers.contains) ?? false
                }
                var events: [String] = []
                for frame in await client.inbox.all() {
                    let f = PhoenixTestClient.Inbox.decode(frame)
                    guard f["event"] as? String == "postgres_changes", let data = (f["payload"] as? [String: Any])?["data"] as? [String: Any] else { continue }
                    let record = data["record"] as? [String: Any] ?? [:]
                    if let id = record["id"] as? String, last.contains(id) { continue }
                    let table = data["table"] as? String ?? "?"
                    events.append("\(data["type"] ?? "?") \(table) \(normalized(record, table: table)) old \(normalized(data["old_record"], table: table))")
                }
                out.append(events.sorted())
            }
            return out
        }

        /// A JSON value with this store's own values replaced by their places: user ids by `U0`…, identity ids dropped,
        /// times and invite codes by what they are; rows sorted (an order a request did not ask for is no answer).
        func normalized(_ json: Any?, table: String) -> String {
            func value(_ v: Any, key: String) -> Any? {
                switch v {
                case let s as String:
                    if let i = users.firstIndex(where: { $0.id == s }) { return "U\(i)" }
                    if let symbol = symbols.first(where: { $0.value == s })?.key { return symbol }
                    if key == "code", let i = codes.firstIndex(of: s) { return "CODE\(i)" }
                    if s.count >= 10, Timestamps.parse(s) != nil, s.first?.isNumber == true { return "<time>" }
                    return s
                case let b as Bool where type(of: v) == Bool.self:
                    return b ? "true" : "false"
                case let n as NSNumber:
                    // An identity id: which one the store gave is its own (PostgreSQL's sequence also spends refused inserts);
                    // one learned is named by its place.
                    if key == "id" {
                        return numbers.filter { $0.table == table }.firstIndex { $0.value == "\(n)" }.map { "N:\(table):\($0)" }
                    }
                    return "\(n.doubleValue)"
                case let o as [String: Any]:
                    var m: [String: Any] = [:]
                    for (k, x) in o { if let y = value(x, key: k) { m[k] = y } }
                    return m
                case let a as [Any]:
                    return a.compactMap { value($0, key: key) }.map(text).sorted()
                default:
                    return "null"
                }
            }
            func text(_ v: Any) -> String {
                switch v {
                case let o as [String: Any]: "{" + o.keys.sorted().map { "\($0):\(text(o[$0]!))" }.joined(separator: ",") + "}"
                case let a as [Any]: "[" + a.map(text).joined(separator: ",") + "]"
                default: "\(v)"
                }
            }
            guard let json else { return "" }
            return value(json, key: "").map(text) ?? ""
        }
    }
}

/// Green Box's requests, drawn from a seed: tables, columns and values that make the policies, constraints, conflicts
/// and RPCs decide, with odd literals among them. NaN, `infinity` as a time, and a JSON object into a text column are
/// left out: they are the stores' known differences (docs/server.md).
struct GreenBoxRequests {
    static let users = 4
    static let codes = 3
    private var draws: Draws
    private var channels = ChannelRequests()

    init(seed: UInt64) { draws = Draws(seed: seed) }
    private mutating func random() -> UInt64 { draws.random() }
    private mutating func pick<T>(_ options: [T]) -> T { draws.pick(options) }
    private mutating func chance(_ p: Double) -> Bool { draws.chance(p) }


    private mutating func user() -> String { "{{U\(random() % UInt64(Self.users))}}" }

    /// A JSON value for a column, mostly sensible, sometimes odd.
    private mutating func json(_ column: String) -> String {
        let odd = ["null", "5", "true", #""""#, #""a\u0000b""#, #"" 7 ""#, #""now""#, #""2026-01-01""#]
        if chance(0.15) { return pick(odd) }
        switch column {
        case "id", "user_id_1", "user_id_2", "requested_by", "sender_id", "recipient_id", "inviter_id", "accepted_by":
            return chance(0.1) ? #""{{U\#(random() % UInt64(Self.users)):braced}}""# : #""\#(user())""#
        case "status": return pick([#""pending""#, #""active""#, #""blocked""#])
        case "preference_1", "preference_2", "preference": return pick([#""precise""#, #""general""#, #""maybe""#, "null"])
        case "payload", "public_key", "full_name", "avatar_url": return pick([#""p1""#, #""p2""#, #""\t""#, "42"])
        case "expires_at", "accepted_at": return pick([#""2030-01-01T00:00:00Z""#, #""2020-01-01""#, #""tomorrow""#, #""soon""#])
        default: return "null"
        }
    }

    static let tables: [(name: String, columns: [String])] = [
        ("users", ["id", "full_name", "avatar_url", "public_key"]),
        ("friendships", ["user_id_1", "user_id_2", "status", "requested_by", "preference_1", "preference_2"]),
        ("encrypted_locations", ["sender_id", "recipient_id", "payload"]),
        ("invites", ["code", "inviter_id", "preference", "expires_at", "accepted_by"]),
    ]

    private mutating func object(_ columns: [String]) -> String {
        var keys = columns.filter { _ in chance(0.8) }
        if chance(0.05) { keys.append("nosuch") }
        if keys.contains("code") { keys.removeAll { $0 == "code" } }
        return "{" + keys.map { #""\#($0)":\#(json($0))"# }.joined(separator: ",") + "}"
    }

    /// A filter on one of `columns`: an operator and a literal, in a query string.
    private mutating func filter(_ columns: [String]) -> String {
        let column = pick(columns.filter { $0 != "code" } + ["created_at"])
        let literal: String
        switch column {
        case "created_at", "expires_at", "accepted_at": literal = pick(["2026-01-01", "2100-01-01T00:00:00Z", "today", "soon"])
        case "status": literal = pick(["pending", "active", "x"])
        case "preference_1", "preference_2", "preference": literal = pick(["precise", "general"])
        case "payload", "public_key", "full_name", "avatar_url": literal = pick(["p1", "key-1", "%09", "a%00b"])
        default: literal = chance(0.1) ? pick(["7", "not-a-uuid", "{{U1:braced}}"]) : user()
        }
        switch random() % 6 {
        case 0: return "\(column)=neq.\(literal)"
        case 1: return "\(column)=is.null"
        case 2: return "\(column)=in.(\(literal),\(user()))"
        case 3 where ["created_at", "expires_at", "accepted_at"].contains(column): return "\(column)=\(pick(["gt", "lt"])).\(literal)"
        default: return "\(column)=eq.\(literal)"
        }
    }

    mutating func next() -> StoreDifferentialTests.Request {
        let actor: StoreDifferentialTests.Request.Actor = chance(0.8) ? .user(Int(random() % UInt64(Self.users)))
            : pick([.anon, .forged, .service])
        // A quarter on Realtime's channels: two public rooms, and a private one only the service role may join (Green Box
        // has no policies on realtime.messages).
        if chance(0.25) {
            let topic = pick(["room-a", "room-b", "locations:{{U0}}"])
            return channels.next(actor, topic, isPrivate: topic.hasPrefix("locations") || chance(0.1), &draws)
        }
        let table = pick(Self.tables)
        let filters = (0..<Int(random() % 3)).map { _ in filter(table.columns) }
        switch random() % 10 {
        case 0, 1, 2:
            var query = filters
            // An embed (`users(*)`) is served by neither store (docs/server.md, "Known gaps"): both must refuse it alike.
            query.insert("select=" + pick(["*", table.columns.filter { $0 != "code" }.prefix(2).joined(separator: ","), "nosuch", "*,users(*)"]), at: 0)
            if chance(0.3) { query.append("order=\(pick(table.columns)).\(pick(["asc", "desc"]))") }
            if chance(0.2) { query.append("limit=\(pick(["1", "2", "-1"]))") }
            return .init(actor: actor, method: "GET", path: "/rest/v1/\(table.name)?" + query.joined(separator: "&"))
        case 3, 4, 5:
            let count = chance(0.3) ? 2 + Int(random() % 2) : 1
            let objects = (0..<count).map { _ in object(table.columns) }
            var prefer = [pick(["return=minimal", "return=representation"])]
            if chance(0.3) { prefer.append("missing=default") }
            var path = "/rest/v1/\(table.name)"
            if chance(0.25) {
                prefer.append(pick(["resolution=merge-duplicates", "resolution=ignore-duplicates"]))
                path += "?on_conflict=" + pick(table.name == "users" ? ["id"] : table.name == "invites" ? ["code"] : ["id", "status"])
            }
            return .init(actor: actor, method: "POST", path: path, body: count == 1 && chance(0.7) ? objects[0] : "[" + objects.joined(separator: ",") + "]",
                         prefer: prefer.joined(separator: ","))
        case 6, 7:
            let body = chance(0.2) ? "{}" : "{" + table.columns.filter { $0 != "code" && $0 != "id" }.filter { _ in chance(0.4) }
                .map { #""\#($0)":\#(json($0))"# }.joined(separator: ",") + "}"
            return .init(actor: actor, method: "PATCH", path: "/rest/v1/\(table.name)?" + (filters.isEmpty ? [filter(table.columns)] : filters).joined(separator: "&"),
                         body: body, prefer: pick(["return=minimal", "return=representation"]))
        case 8:
            return .init(actor: actor, method: "DELETE", path: "/rest/v1/\(table.name)?" + (filters.isEmpty ? [filter(table.columns)] : filters).joined(separator: "&"),
                         prefer: pick(["return=minimal", "return=representation"]))
        default:
            if chance(0.5) {
                var args: [String] = []
                if chance(0.7) { args.append(#""preference":\#(json("preference"))"#) }
                if chance(0.1) { args.append(#""x":1"#) }
                return .init(actor: actor, method: "POST", path: "/rest/v1/rpc/create_invite", body: "{" + args.joined(separator: ",") + "}")
            }
            var args: [String] = []
            if chance(0.85) { args.append(chance(0.8) ? #""code":"{{CODE\#(random() % UInt64(Self.codes))}}""# : #""code":\#(pick(["null", "5", #""ZZZZZZZZ""#]))"#) }
            if chance(0.5) { args.append(#""preference":\#(json("preference"))"#) }
            if chance(0.1) { args.append(#""x":1"#) }
            return .init(actor: actor, method: "POST", path: "/rest/v1/rpc/accept_invite", body: "{" + args.joined(separator: ",") + "}")
        }
    }
}

/// Survale's requests, drawn from a seed: operations created, started, ended and left through its RPCs, invites and
/// join requests decided, chat, the archive, targets and staging areas, by members of two agencies; the ids the
/// stores make (an operation's, an invite's) are named by their place (`{{V0}}`, `{{N0}}`) as they are learned.
struct SurvaleRequests {
    static let teams: [(team: String, agency: String)] = [("A1", "A"), ("A2", "A"), ("B1", "B")]
    /// The users' teams: two in A1, one in A2, one in agency B.
    static let userTeams = ["A1", "A1", "A2", "B1"]
    /// How many learned ids the requests refer to.
    static let learnedKept = 8
    private var draws: Draws
    private var channels = ChannelRequests()

    init(seed: UInt64) { draws = Draws(seed: seed) }
    private mutating func random() -> UInt64 { draws.random() }
    private mutating func pick<T>(_ options: [T]) -> T { draws.pick(options) }
    private mutating func chance(_ p: Double) -> Bool { draws.chance(p) }

    private mutating func user() -> String { "{{U\(random() % UInt64(Self.userTeams.count))}}" }
    /// The operation set up at the start (`{{OP}}`), or one learned from an answer.
    private mutating func operation() -> String { chance(0.3) ? "{{OP}}" : "{{V\(random() % 4)}}" }
    private mutating func number(_ table: String) -> String { "{{N:\(table):\(random() % UInt64(Self.learnedKept))}}" }

    static let tables: [(name: String, columns: [String])] = [
        ("users", ["vehicle_type", "vehicle_color", "callsign"]),
        ("operations", ["name", "incident_number", "status", "case_agent_id"]),
        ("operation_members", ["operation_id", "user_id", "role", "left_at"]),
        ("operation_invites", ["operation_id", "invitee_id", "invited_by", "status"]),
        ("join_requests", ["operation_id", "requester_id", "status"]),
        ("targets", ["operation_id", "kind", "label", "lat", "lon", "created_by"]),
        ("staging_areas", ["operation_id", "label", "lat", "lon"]),
        ("op_messages", ["operation_id", "sender_id", "body"]),
        ("locations_archive", ["operation_id", "user_id", "lat", "lon", "accuracy", "fix", "recorded_at"]),
    ]

    private mutating func json(_ column: String) -> String {
        if chance(0.12) { return pick(["null", "5", "true", #""""#, #""a\u0000b""#, #"" 7 ""#, #""now""#]) }
        switch column {
        case "operation_id": return chance(0.1) ? #""not-a-uuid""# : #""\#(operation())""#
        case "user_id", "invitee_id", "invited_by", "requester_id", "sender_id", "created_by", "case_agent_id": return #""\#(user())""#
        case "status": return pick([#""pending""#, #""accepted""#, #""active""#, #""ended""#, #""approved""#])
        case "role": return pick([#""member""#, #""case_agent""#])
        case "kind": return pick([#""person""#, #""vehicle""#, #""ufo""#])
        case "fix": return pick([#""gps""#, #""reduced""#, #""radar""#])
        case "vehicle_type": return pick([#""suv""#, #""tank""#])
        case "lat", "lon", "accuracy": return pick(["51.5", "-0.12", #"" 46.05""#, #""Infinity""#, "1e3"])
        case "recorded_at", "left_at": return pick([#""2026-11-25T12:00:00Z""#, #""2026-01-01""#, #""yesterday""#, #""soon""#])
        default: return pick([#""Harbor""#, #""\t""#, #""  ""#, "42"])
        }
    }

    private mutating func filter(_ table: String, _ columns: [String]) -> String {
        let column = pick(columns + ["operation_id", "id"])
        let literal: String
        switch column {
        case "operation_id": literal = chance(0.1) ? "{bad}" : operation()
        // A raw id names a different row on each store (PostgreSQL's sequence also spends refused inserts): learned ones.
        case "id": literal = pick([number(table), number(table), "x"])
        case "lat", "lon", "accuracy": literal = pick(["51.5", "0", "Infinity"])
        case "recorded_at", "left_at": literal = pick(["2026-01-01", "today", "soon"])
        case _ where column.hasSuffix("_id") || column == "invited_by" || column == "created_by": literal = user()
        default: literal = pick(["pending", "active", "Harbor", "suv", "member"])
        }
        switch random() % 5 {
        case 0: return "\(column)=neq.\(literal)"
        case 1: return "\(column)=is.null"
        case 2: return "\(column)=in.(\(literal))"
        default: return "\(column)=eq.\(literal)"
        }
    }

    private mutating func rpc() -> (String, [String]) {
        switch random() % 7 {
        case 0:
            var args: [String] = []
            if chance(0.9) { args.append(#""name":\#(json("name"))"#) }
            if chance(0.5) { args.append(#""incident_number":\#(pick(["null", "2417", #""24-001""#]))"#) }
            return ("create_operation", args)
        case 1: return ("start_operation", [#""operation_id":"\#(operation())""#])
        // Not the operation set up at the start: its channels stay open to its members for the whole stream.
        case 2: return ("end_operation", [#""operation_id":"{{V\#(random() % 4)}}""#])
        case 3: return ("leave_operation", [#""operation_id":"\#(operation())""#])
        case 4:
            var args = [#""invite_id":\#(pick([number("operation_invites"), "null", #""7""#]))"#]
            if chance(0.6) { args.append(#""accept":\#(pick(["true", "false", "null", #"" fal""#, #""o""#]))"#) }
            return ("respond_to_invite", args)
        case 5:
            var args = [#""request_id":\#(pick([number("join_requests"), "null"]))"#]
            if chance(0.6) { args.append(#""approve":\#(pick(["true", "false", "null", #""yes""#]))"#) }
            return ("decide_join_request", args)
        default:
            var args: [String] = []
            if chance(0.9) { args.append(#""lat":\#(pick(["51.5", "null", #""51.5""#]))"#) }
            if chance(0.9) { args.append(#""lon":-0.12"#) }
            if chance(0.4) { args.append(#""radius_m":\#(pick(["100", "null", "5000"]))"#) }
            return ("nearby_operations", args)
        }
    }

    mutating func next() -> StoreDifferentialTests.Request {
        let actor: StoreDifferentialTests.Request.Actor = chance(0.85) ? .user(Int(random() % UInt64(Self.userTeams.count)))
            : pick([.anon, .forged, .service])
        // A quarter on Realtime's channels: an operation's locations and chat, and a pair's direct messages (its name with
        // the two ids in order, or the wrong way round), each private as the app joins them, sometimes public.
        if chance(0.25) {
            let (a, b) = (random() % 4, random() % 4)
            let op = chance(0.5) ? "{{OP}}" : operation()
            let topic = pick(["op_\(op)_locations", "op_\(op)_locations", "op_\(op)_chat", "op_\(op)_dm_{{DM:0:1}}",
                              "op_\(op)_dm_{{DM:\(a):\(b)}}", "op_\(op)_dm_{{DMR:\(a):\(b)}}"])
            return channels.next(actor, topic, isPrivate: chance(0.9), &draws)
        }
        let table = pick(Self.tables)
        let filters = (0..<Int(random() % 3)).map { _ in filter(table.name, table.columns) }
        switch random() % 10 {
        case 0, 1:
            var query = ["select=" + pick(["*", table.columns.prefix(2).joined(separator: ","), "nosuch", "*,operations(*)"])] + filters
            if chance(0.2) { query.append("limit=1&order=id.asc") }
            return .init(actor: actor, method: "GET", path: "/rest/v1/\(table.name)?" + query.joined(separator: "&"))
        case 2, 3, 4 where table.name != "users" && table.name != "operations":
            let count = chance(0.25) ? 2 : 1
            let objects = (0..<count).map { _ in
                "{" + table.columns.filter { _ in chance(0.85) }.map { #""\#($0)":\#(json($0))"# }.joined(separator: ",") + "}"
            }
            var prefer = [pick(["return=minimal", "return=representation"])]
            if chance(0.3) { prefer.append("missing=default") }
            return .init(actor: actor, method: "POST", path: "/rest/v1/\(table.name)", body: count == 1 ? objects[0] : "[" + objects.joined(separator: ",") + "]",
                         prefer: prefer.joined(separator: ","))
        case 2, 3, 4, 5, 6:
            // Users and operations are written by the service role and the RPCs: an RPC instead.
            let (name, args) = rpc()
            let extra = chance(0.08) ? [#""x":1"#] : []
            return .init(actor: actor, method: "POST", path: "/rest/v1/rpc/\(name)", body: "{" + (args + extra).joined(separator: ",") + "}")
        case 7, 8:
            let body = chance(0.15) ? "{}" : "{" + table.columns.filter { _ in chance(0.4) }.map { #""\#($0)":\#(json($0))"# }.joined(separator: ",") + "}"
            return .init(actor: actor, method: "PATCH", path: "/rest/v1/\(table.name)?" + (filters.isEmpty ? [filter(table.name, table.columns)] : filters).joined(separator: "&"),
                         body: body, prefer: pick(["return=minimal", "return=representation"]))
        default:
            return .init(actor: actor, method: "DELETE", path: "/rest/v1/\(table.name)?" + (filters.isEmpty ? [filter(table.name, table.columns)] : filters).joined(separator: "&"),
                         prefer: pick(["return=minimal", "return=representation"]))
        }
    }
}

/// Channel requests, drawn from a seed: a join, or mostly what follows one (a track, an untrack, a broadcast, a leave,
/// a fresh token) by an actor on a topic it asked to join before, so that most reach a channel and are heard.
struct ChannelRequests {
    typealias Request = StoreDifferentialTests.Request
    private var asked: [(actor: Request.Actor, topic: String)] = []

    mutating func next(_ actor: Request.Actor, _ topic: String, isPrivate: Bool, _ draws: inout Draws) -> Request {
        if asked.isEmpty || draws.chance(0.3) {
            asked.append((actor, topic))
            return .init(actor: actor, method: isPrivate ? "JOIN-PRIVATE" : "JOIN", path: topic)
        }
        let (actor, topic) = draws.chance(0.85) ? draws.pick(asked) : (actor, topic)
        switch draws.random() % 7 {
        case 0, 1: return .init(actor: actor, method: "TRACK", path: topic, body: draws.pick([#"{"status":"on"}"#, #"{"callsign":"C","n":1}"#, "5"]))
        case 2: return .init(actor: actor, method: "UNTRACK", path: topic)
        case 3, 4:
            return .init(actor: actor, method: "BROADCAST", path: topic, body: draws.pick([
                #"{"event":"loc","payload":{"lat":46.05}}"#, #"{"event":"chat","payload":{"m":"hi"}}"#, #"{"payload":{}}"#,
            ]))
        case 5: return .init(actor: actor, method: "LEAVE", path: topic)
        default: return .init(actor: actor, method: "TOKEN", path: topic)
        }
    }
}

/// The requests' draws, seeded (SplitMix64): the same seed, the same stream of requests.
struct Draws {
    private var state: UInt64

    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }

    mutating func random() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func pick<T>(_ options: [T]) -> T { options[Int(random() % UInt64(options.count))] }
    mutating func chance(_ p: Double) -> Bool { Double(random() % 1000) / 1000 < p }
}
