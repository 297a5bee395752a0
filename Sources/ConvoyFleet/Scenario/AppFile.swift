import ConvoyMetrics
import Foundation
import Yams

/// Reads a declared app's YAML (docs/apps.md) strictly: an unknown key, a wrong type or a placeholder its place does
/// not offer is an error with file, line and column, never a run of zeros.
public enum AppFile {
    public static func load(_ path: String) throws(ScenarioError) -> DeclaredAppSpec {
        try parse(try YAMLDocument.text(path, what: "the app file"), file: path)
    }

    public static func parse(_ text: String, file: String) throws(ScenarioError) -> DeclaredAppSpec {
        try YAMLDocument.root(text, file: file, empty: "an app file needs name, shape, keys, links, posting, plaintext, receiving and retention")
            .declaredApp()
    }

    /// What each place's templates may name (besides `uuid`, `big:<size>` and `saved.<name>`).
    static let clock = ["now.iso", "now.s", "now.ms"]
    static let publishNames = ["me.id", "me.email", "me.public_key", "me.device"] + clock
    static let lookupNames = ["ids"] + clock
    static let linkNames = ["me.id", "me.email", "me.preference", "friend.id", "friend.email"] + clock
    static let rowNames = ["me.id", "recipient.id", "sealed"] + clock
    static let receivingNames = ["me.id"]
    /// An action's steps: the phone's user, and how many times this phone has made the action (1, 2, …).
    static let actionNames = ["me.id", "me.email", "action.n"] + clock
    /// A set-up step's: the phone's user.
    static let setupNames = ["me.id", "me.email"] + clock
    /// The sections of an app that shares locations (all of them, or none for an app of actions alone).
    static let locationSections = ["keys", "links", "posting", "plaintext", "receiving", "retention"]
    /// A group app's: how groups are made and ended, the broadcast, and the plaintext it carries.
    static let groupSections = ["groups", "broadcast", "plaintext"]
    /// The group shape's places: the owner creating group `{{group.number}}` (`{{group.id}}` once a step saved it); a member coming in (the step's maker is
    /// `me`, the owner or the member); the owner ending it; the channel's name; the presence tracked.
    static let createNames = ["me.id", "me.email", "group.number", "group.id"] + clock
    static let joinNames = ["me.id", "me.email", "owner.id", "member.id", "member.email", "group.id", "group.number"] + clock
    static let endNames = ["me.id", "group.id", "group.number"] + clock
    static let topicNames = ["group.id"]
    static let presenceNames = ["me.id", "me.email"]
}

extension Reader {
    func declaredApp() throws(ScenarioError) -> DeclaredAppSpec {
        let m = try mapping(["name", "shape", "backend", "keys", "links", "posting", "plaintext", "receiving", "retention", "setup", "actions",
                             "groups", "broadcast"])
        func need(_ key: String) throws(ScenarioError) -> Reader {
            guard let r = m[key] else { throw error("an app file needs \(key) (docs/apps.md)") }
            return r
        }
        let name = try need("name").string()
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || "-_".contains($0) }) else {
            throw try need("name").error("a name is letters, digits, - and _")
        }
        let shape = try need("shape")
        let shapeName = try shape.string()
        let grouped = shapeName == "group"
        guard grouped || shapeName == "pairwise" else {
            throw shape.error("shape is pairwise (sealed rows to each friend) or group (a broadcast to the group on a private channel); "
                              + "mailbox apps are built in so far (docs/apps.md)")
        }
        var serves: String?, sqlFolder: String?
        if let b = m["backend"] {
            let bm = try b.mapping(["embedded", "sql"])
            if let e = bm["embedded"] {
                let s = try e.string()
                guard ["greenbox"].contains(s) else { throw e.error("embedded is the built-in backend that serves these tables: greenbox") }
                serves = s
            }
            if let q = bm["sql"] {
                guard serves == nil else { throw q.error("give embedded (a built-in backend) or sql (the app's own folder), not both") }
                let given = try q.string()
                let path = given.hasPrefix("/") ? given : URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent(given).standardized.path
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
                    throw q.error("no SQL folder \(path)")
                }
                sqlFolder = path
            }
        }
        var spec: DeclaredAppSpec
        let given = AppFile.locationSections.filter { m[$0] != nil }
        if grouped {
            for key in AppFile.locationSections where key != "plaintext" {
                if let r = m[key] {
                    throw r.error("\(key) is for the pairwise shape; a group app gives groups, broadcast and plaintext (docs/apps.md, \"A group app\")")
                }
            }
            if let missing = AppFile.groupSections.first(where: { m[$0] == nil }) {
                throw error("a group app needs \(missing) (groups, broadcast and plaintext: docs/apps.md, \"A group app\")")
            }
            spec = DeclaredAppSpec.noLocations(name: name, file: file, serves: serves, sqlFolder: sqlFolder)
            spec.sharesLocations = true
            spec.plaintext = try need("plaintext").declaredPlaintext()
            spec.group = try need("groups").declaredGroups(broadcast: try need("broadcast"), plaintext: spec.plaintext)
        } else if let r = ["groups", "broadcast"].compactMap({ m[$0] }).first {
            throw r.error("\(r.path) is for a group app (shape: group); a pairwise app receives on postgres_changes (receiving:)")
        } else if given.isEmpty {
            // An app of actions alone: its phones share no locations.
            guard m["actions"] != nil else {
                throw error("an app file needs keys, links, posting, plaintext, receiving and retention (an app that shares locations) or actions (docs/apps.md)")
            }
            spec = DeclaredAppSpec.noLocations(name: name, file: file, serves: serves, sqlFolder: sqlFolder)
        } else {
            if let missing = AppFile.locationSections.first(where: { m[$0] == nil }) {
                throw error("an app that shares locations needs \(missing) too (it gives \(given.joined(separator: ", "))); an app of actions alone gives none of them")
            }
            let retention = try need("retention").declaredRetention()
            let posting = try need("posting").declaredPosting(retention: retention)
            if retention.purge != .backend, sqlFolder == nil {
                throw (try need("retention")).error("a purge by delete or function is run by convoy serve on the app's SQL: give backend: {sql: FOLDER}")
            }
            spec = DeclaredAppSpec(name: name, file: file, serves: serves, sqlFolder: sqlFolder, keys: try need("keys").declaredKeys(), links: try need("links").declaredLinks(),
                                   posting: posting, plaintext: try need("plaintext").declaredPlaintext(),
                                   receiving: try need("receiving").declaredReceiving(), retention: retention)
        }
        if let setup = m["setup"] {
            for r in try setup.sequence() { spec.setup.append(try r.declaredWrite(AppFile.setupNames, extra: ["as"])) }
        }
        if let a = m["actions"] {
            for r in try a.sequence() {
                let action = try r.declaredAction()
                if spec.actions.contains(where: { $0.name == action.name }) { throw r.error("two actions are named \(action.name)") }
                spec.actions.append(action)
            }
        }
        return spec
    }

    private func templated(_ names: [String]) throws(ScenarioError) -> String {
        try template(known: { names.contains($0) }, names: names, docs: "docs/templates.md")
    }

    private func body(_ names: [String]) throws(ScenarioError) -> JSONTemplate {
        try jsonTemplate { (r: Reader) throws(ScenarioError) in _ = try r.templated(names) }
    }

    private func encoding() throws(ScenarioError) -> DeclaredAppSpec.Encoding { try choice(DeclaredAppSpec.Encoding.self) }

    /// A write: one of `insert: table`, `upsert: table` (with `on_conflict`), `update: table` (with `where`) or
    /// `rpc: function`, and its `body` and `save`; `extra` are the keys its place adds (a step's `by`).
    func declaredWrite(_ names: [String], extra: [String] = [], saves: Bool = true, reads: Bool = false) throws(ScenarioError) -> DeclaredAppSpec.Write {
        let m = try mapping(["insert", "upsert", "update", "rpc", "on_conflict", "where", "body", "save", "return"] + (reads ? ["select", "query"] : []) + extra)
        let kinds = ["insert", "upsert", "update", "rpc", "select"].filter { m[$0] != nil }
        guard kinds.count == 1, let k = kinds.first, let target = try m[k]?.string() else {
            throw error(reads ? "a step is one of select: TABLE, insert: TABLE, upsert: TABLE, update: TABLE or rpc: FUNCTION"
                              : "a write is one of insert: TABLE, upsert: TABLE, update: TABLE or rpc: FUNCTION")
        }
        let kind: DeclaredAppSpec.Write.Kind
        switch k {
        case "upsert":
            guard let c = m["on_conflict"] else { throw error("an upsert needs on_conflict: the column(s) it merges on") }
            kind = .upsert(table: target, onConflict: try c.string())
        case "update":
            guard let w = m["where"] else { throw error("an update needs where: a filter, e.g. \"id=eq.{{saved.link}}\"") }
            kind = .update(table: target, where: try w.templated(names))
        case "rpc": kind = .rpc(function: target)
        case "select":
            guard let q = m["query"] else { throw error("a select needs query: a PostgREST query, e.g. \"select=id&status=eq.open&limit=1\"") }
            guard m["body"] == nil else { throw m["body"]!.error("a select sends no body") }
            kind = .select(table: target, query: try q.templated(names))
        default: kind = .insert(table: target)
        }
        if k != "select", let q = m["query"] { throw q.error("query is for a select") }
        if k != "upsert", let c = m["on_conflict"] { throw c.error("on_conflict is for an upsert") }
        if k != "update", let w = m["where"] { throw w.error("where is for an update") }
        var save: [DeclaredAppSpec.Write.Saved] = []
        if let s = m["save"] {
            guard saves else { throw s.error("nothing here reads a saved value") }
            guard case .mapping(let pairs) = s.node else { throw s.error("save is a mapping of names to columns: {link: id}") }
            for (key, value) in pairs {
                let name = key.string ?? ""
                let r = Reader(file: file, node: value, path: s.child(name))
                guard Template.savedName("saved.\(name)") != nil else { throw r.error("a saved name is letters, digits and _") }
                save.append(.init(name: name, column: try r.string()))
            }
        }
        var write = DeclaredAppSpec.Write(kind: kind, body: try m["body"]?.body(names) ?? .object([]), save: save, source: path)
        if let who = m["as"] {
            guard ["phone", "service"].contains(try who.string()) else { throw who.error("as is phone (its own token, the default) or service (the project's service key: an admin's step)") }
            write.asService = try who.string() == "service"
        }
        if let r = m["return"] {
            guard try r.string() == "minimal" else { throw r.error("return is minimal (Prefer: return=minimal: the answer has no rows); leave it out for the rows") }
            guard k == "insert" || k == "upsert" || k == "update" else { throw r.error("return: minimal is for an insert, an upsert or an update") }
            if let s = m["save"] { throw s.error("return: minimal answers no row to save from") }
            write.minimal = true
        }
        return write
    }

    func declaredKeys() throws(ScenarioError) -> DeclaredAppSpec.Keys {
        let m = try mapping(["table", "owner", "column", "encoding", "per", "newest", "publish", "lookup"])
        func need(_ key: String) throws(ScenarioError) -> Reader {
            guard let r = m[key] else { throw error("keys needs \(key)") }
            return r
        }
        let per = try m["per"]?.string() ?? "user"
        guard per == "user" || per == "device" else { throw m["per"]!.error("per is user (one key a user) or device (a row a phone)") }
        if per == "device", m["newest"] == nil { throw error("keys per device need newest: the column that orders a user's devices") }
        if per == "user", let n = m["newest"] { throw n.error("newest orders a user's devices (per: device)") }
        return DeclaredAppSpec.Keys(table: try need("table").string(), owner: try need("owner").string(), column: try need("column").string(),
                                    encoding: try m["encoding"]?.encoding() ?? .base64, perDevice: per == "device", newest: try m["newest"]?.string(),
                                    publish: try need("publish").declaredWrite(AppFile.publishNames, saves: false),
                                    lookup: try m["lookup"]?.declaredWrite(AppFile.lookupNames, saves: false))
    }

    func declaredLinks() throws(ScenarioError) -> DeclaredAppSpec.Links {
        let m = try mapping(["during", "sharing", "table", "columns", "status", "steps"])
        func need(_ key: String) throws(ScenarioError) -> Reader {
            guard let r = m[key] else { throw error("links needs \(key)") }
            return r
        }
        let during = try m["during"]?.string() ?? "setup"
        guard during == "setup" || during == "run" else { throw m["during"]!.error("during is setup (before the timeline) or run (on the phones)") }
        let cm = try need("columns").mapping(["id", "inviter", "invitee", "status"])
        func column(_ key: String) throws(ScenarioError) -> String {
            guard let r = cm[key] else { throw (try need("columns")).error("links.columns needs \(key)") }
            return try r.string()
        }
        let sm = try need("status").mapping(["active", "pending"])
        guard let active = sm["active"], let pending = sm["pending"] else { throw (try need("status")).error("links.status needs active and pending") }
        var steps: [DeclaredAppSpec.Links.Step] = []
        var marked: Reader?
        for r in try need("steps").sequence() {
            let keys = try r.mapping(["insert", "upsert", "update", "rpc", "on_conflict", "where", "body", "save", "by", "accepts"])
            guard let by = keys["by"], ["inviter", "invitee"].contains(try by.string()) else { throw r.error("a step needs by: inviter or by: invitee") }
            let byInvitee = try by.string() == "invitee"
            if steps.isEmpty, byInvitee { throw by.error("the inviter makes the first step (the one who invites)") }
            let accepts = try keys["accepts"]?.bool() ?? false
            if accepts, let marked { throw keys["accepts"]!.error("one step accepts; \(marked.path) does already") }
            if accepts { marked = keys["accepts"] }
            steps.append(.init(byInvitee: byInvitee, write: try r.declaredWrite(AppFile.linkNames, extra: ["by", "accepts"]), accepts: accepts))
        }
        var links = DeclaredAppSpec.Links(duringRun: during == "run", steps: steps, table: try need("table").string(),
                                          columns: .init(id: try column("id"), inviter: try column("inviter"), invitee: try column("invitee"),
                                                         status: try column("status")),
                                          active: try active.string(), pending: try pending.string())
        if let r = m["sharing"] {
            guard let sharing = LinkSharing(rawValue: try r.string()) else {
                throw r.error("sharing is mutual (both friends share), inviter (the one who invited shares) or invitee (the one invited shares: a follow)")
            }
            links.sharing = sharing
        }
        let stepsReader = try need("steps")
        guard !links.requestSteps.isEmpty, !links.acceptSteps.isEmpty else {
            throw stepsReader.error("links need the steps that ask and the step that accepts (the invitee's first, or the one marked accepts: true)")
        }
        if links.duringRun {
            guard links.requestSteps.allSatisfy({ !$0.byInvitee }), links.acceptSteps.allSatisfy(\.byInvitee) else {
                throw stepsReader.error("during: run, the inviter's steps come first and the invitee, told over Realtime, accepts with the rest: "
                                        + "steps in another order are made during: setup")
            }
            guard links.requestSteps.contains(where: { $0.write.save.contains { $0.name == "link" } }) else {
                throw stepsReader.error("during: run, the inviter's steps save the friendship's id as link (save: {link: \(links.columns.id)}): the invitee's steps name it {{saved.link}}")
            }
            for (i, step) in links.steps.enumerated() where step.byInvitee {
                let names = step.write.body.placeholders + (step.write.kind.filter.map(Template.placeholders) ?? [])
                if let bad = names.first(where: { $0.hasPrefix("friend.") || $0 == "me.email" }) {
                    throw stepsReader.error("steps[\(i)]: during: run, the invitee knows the request ({{saved.link}}), not {{\(bad)}}")
                }
            }
        }
        return links
    }

    func declaredPosting(retention: DeclaredAppSpec.Retention) throws(ScenarioError) -> DeclaredAppSpec.Posting {
        let m = try mapping(["table", "requests", "sealed", "time", "row"])
        guard let table = m["table"], let rowReader = m["row"] else { throw error("posting needs table and row") }
        let requests = try m["requests"]?.string() ?? "bulk"
        guard requests == "bulk" || requests == "per_recipient" else {
            throw m["requests"]!.error("requests is bulk (a tick's rows in one insert) or per_recipient (one insert a friend)")
        }
        let row = try rowReader.body(AppFile.rowNames)
        guard case .object(let members) = row else { throw rowReader.error("row is a mapping of columns to values") }
        for needed in ["sealed", "recipient.id"] where !row.placeholders.contains(needed) {
            throw rowReader.error("the row needs {{\(needed)}}: one row is one sealed box for one friend")
        }
        let time = try m["time"]?.string() ?? "server"
        guard time == "server" || time == "phone" else { throw m["time"]!.error("time is server (the column's default) or phone (the row writes it)") }
        let stamped = members.first { $0.key == retention.column }
        if time == "phone" {
            guard let stamped, stamped.value.placeholders.contains(where: AppFile.clock.contains) else {
                throw rowReader.error("time: phone, so the row writes \(retention.column) (the retention column) as {{now.iso}}, {{now.s}} or {{now.ms}}")
            }
        } else if stamped != nil {
            throw rowReader.error("time: server, so the row leaves \(retention.column) to the server (or say time: phone)")
        }
        return DeclaredAppSpec.Posting(table: try table.string(), bulk: requests == "bulk", row: row, sealed: try m["sealed"]?.encoding() ?? .base64,
                                       phoneStamps: time == "phone")
    }

    func declaredPlaintext() throws(ScenarioError) -> JSONTemplate {
        let t = try jsonTemplate { (r: Reader) throws(ScenarioError) in
            let s = try r.templated(DeclaredPlaintext.names)
            if !Template.placeholders(in: s).isEmpty, Template.whole(s) == nil {
                throw r.error("a plaintext field is one placeholder alone (\"{{lat}}\"), so a friend can read it back")
            }
        }
        guard case .object = t else { throw error("the plaintext is a JSON object (a mapping)") }
        let used = t.placeholders
        for needed in ["lat", "lon", "acc"] where !used.contains(needed) { throw error("the plaintext needs {{\(needed)}}") }
        let times = DeclaredPlaintext.times.filter(used.contains)
        guard times.count == 1 else { throw error("the plaintext needs one time: {{time.s}}, {{time.ms}} or {{time.iso}}") }
        guard Set(used).count == used.count else { throw error("each placeholder appears once in the plaintext") }
        return t
    }

    func declaredReceiving() throws(ScenarioError) -> DeclaredAppSpec.Receiving {
        let m = try mapping(["postgres_changes", "topic", "columns"])
        guard let pc = m["postgres_changes"] else { throw error("receiving needs postgres_changes: {table, filter}") }
        let pm = try pc.mapping(["table", "filter"])
        guard let table = pm["table"], let filter = pm["filter"] else { throw pc.error("postgres_changes needs table and filter") }
        guard let columns = m["columns"] else { throw error("receiving needs columns: {id, sender, body}") }
        let cm = try columns.mapping(["id", "sender", "body"])
        guard let id = cm["id"], let sender = cm["sender"], let body = cm["body"] else { throw columns.error("columns needs id, sender and body") }
        let filterText = try filter.templated(AppFile.receivingNames)
        guard filterText.contains("{{me.id}}") else { throw filter.error("the filter names the phone ({{me.id}}): a phone hears the rows for it") }
        return DeclaredAppSpec.Receiving(table: try table.string(), filter: filterText, sender: try sender.string(), body: try body.string(),
                                         id: try id.string(), topic: try m["topic"]?.templated(AppFile.receivingNames) ?? "app:{{me.id}}")
    }

    func declaredRetention() throws(ScenarioError) -> DeclaredAppSpec.Retention {
        let m = try mapping(["window", "column", "purge"])
        guard let column = m["column"] else { throw error("retention needs column: the timestamp whose age counts") }
        var purge = DeclaredAppSpec.Retention.Purge.backend
        if let p = m["purge"] {
            if case .scalar = p.node {
                guard try p.string() == "backend" else { throw p.error("purge is backend (it purges by itself), {delete: TABLE} or {function: NAME}") }
            } else {
                let pm = try p.mapping(["delete", "function"])
                if let d = pm["delete"], pm["function"] == nil {
                    purge = .delete(table: try d.string())
                } else if let f = pm["function"], pm["delete"] == nil {
                    purge = .function(try f.string())
                } else {
                    throw p.error("purge is backend, {delete: TABLE} or {function: NAME}")
                }
            }
        }
        return DeclaredAppSpec.Retention(window: try m["window"]?.duration(minimum: 1), column: try column.string(), purge: purge)
    }
}

extension Reader {
    /// One of `actions:`: `{name, every, share, steps}`.
    func declaredAction() throws(ScenarioError) -> DeclaredAppSpec.Action {
        let m = try mapping(["name", "every", "share", "steps"])
        guard let nameNode = m["name"], let every = m["every"], let stepsNode = m["steps"] else { throw error("an action needs name, every and steps") }
        let name = try nameNode.string()
        guard HistogramName.canDeclare(name) else {
            throw nameNode.error("an action's name is its metric's: lowercase letters, digits and _, a letter first, and not one of Convoy's own (docs/results.md)")
        }
        let range = try every.range()
        var steps: [DeclaredAppSpec.Write] = []
        for r in try stepsNode.sequence() { steps.append(try r.declaredWrite(AppFile.actionNames, reads: true)) }
        guard !steps.isEmpty else { throw stepsNode.error("an action needs at least one step") }
        return DeclaredAppSpec.Action(name: name, every: range, share: try m["share"]?.fraction() ?? 1, steps: steps)
    }
}

extension DeclaredAppSpec.Write.Kind {
    /// An update's filter template.
    var filter: String? {
        if case .update(_, let w) = self { return w }
        return nil
    }
}
