import ConvoyCrypto
import ConvoyJSON
import ConvoyWire
import Foundation

/// `convoy app check`'s last step: the purge, made as `convoy serve` makes it, judged both ways — a row older than the
/// window goes, and the row the check just posted stays.
extension AppCheck {
    /// The purge of a declared app whose file has `convoy serve` delete rows (`purge: {delete: TABLE}`), with the window
    /// the file gives, as the service role: when the phone stamps the time (`time: phone`), a row stamped a minute past
    /// the window is posted first, and must go; `young` (the row the check posted) must stay. What the check cannot make
    /// as the server makes it is "not tested here", with the reason.
    static func purge(_ app: DeclaredApp, young: Int64?, update: OutgoingUpdate, from: Session, to: Session,
                      target: SupabaseTarget, via http: SupabaseHTTP) async -> Step {
        let name = "retention: purge"
        let retention = app.spec.retention
        func notTested(_ why: String) -> Step { Step(name: name, passed: nil, detail: "not tested here: \(why); a run with retention checks tests it") }
        let table: String
        switch retention.purge {
        case .backend: return notTested("the backend purges by itself (purge: backend), on its own schedule")
        case .function(let f):
            return notTested("convoy serve calls \(f)(interval) in SQL; PostgREST calls a function by its arguments' names, so the check cannot call it as the server does")
        case .delete(let t): table = t
        }
        guard let window = retention.window else { return notTested("the window is the scenario's (retention.window), and a check has no scenario") }
        guard window >= 30 else { return notTested("a window under 30 s (\(window) s) cannot tell the row just posted from an old one") }
        guard let service = target.serviceKey else {
            return notTested("deleting as convoy serve does needs the service key (--service-key, or a keys file with service_role_key)")
        }
        let now = Date().timeIntervalSince1970
        // A row the purge must take: stamped a minute past the window, where the phone stamps the time into the table purged.
        var old: Int64?
        let stampsOld = app.spec.posting.phoneStamps && table == app.spec.posting.table && table == app.spec.receiving.table
            && stampsColumn(app.spec.posting.row, retention.column)
        if stampsOld {
            do {
                let before = Set(try await app.oldestUpdates(of: to.userID, limit: 100, token: to.accessToken, via: http).map(\.id))
                _ = try await app.send([update], from: from, via: http, stampedAt: now - window - 60)
                let after = try await app.oldestUpdates(of: to.userID, limit: 100, token: to.accessToken, via: http)
                old = after.first { !before.contains($0.id) }?.id
            } catch {
                return Step(name: name, passed: false, detail: "posting a row stamped past the window: \(error)")
            }
        }
        let cutoff = DeclaredPlaintext.iso(now - window)
        do {
            let query = "\(retention.column)=lt.\(cutoff)"
            try await SupabaseREST(http).delete(table, query: query, token: service)
        } catch {
            return Step(name: name, passed: false, detail: "DELETE /rest/v1/\(table)?\(retention.column)=lt.\(cutoff) as the service role: \(error)")
        }
        let left: Set<Int64>
        do {
            left = Set(try await app.oldestUpdates(of: to.userID, limit: 100, token: to.accessToken, via: http).map(\.id))
        } catch {
            return Step(name: name, passed: false, detail: "reading the rows back: \(error)")
        }
        if let young, !left.contains(young) {
            return Step(name: name, passed: false, detail: "the purge deleted the row just posted, younger than the window (\(Int(window)) s)")
        }
        if let old, left.contains(old) {
            return Step(name: name, passed: false, detail: "a row stamped \(Int(window) + 60) s ago survived the purge of \(table) (\(retention.column) < \(cutoff))")
        }
        let gone = old != nil ? "a row stamped a minute past the window went" : stampsOld
            ? "a row stamped a minute past the window was gone before the purge (the server had purged it)"
            : "that an old row goes is not tested here (the server stamps \(retention.column))"
        return Step(name: name, passed: true, detail: "deleted \(table)'s rows with \(retention.column) older than \(Int(window)) s: \(gone); the row just posted stayed")
    }

    /// Whether the posting row writes `column` from the phone's clock (`{{now.iso}}`, `{{now.ms}}`, `{{now.s}}`).
    static func stampsColumn(_ row: JSONTemplate, _ column: String) -> Bool {
        // The row rendered with the clock at a marked time: the column holds that time in one of the clock's forms.
        let clock = { (name: String) in DeclaredApp.clockValue(name, at: 86_400) }
        guard let rendered = try? row.render({ clock($0) ?? .string("…") }), let value = JSONScanner.parse(rendered)?[column] else { return false }
        return ["now.iso", "now.s", "now.ms"].contains { clock($0) == value }
    }
}
