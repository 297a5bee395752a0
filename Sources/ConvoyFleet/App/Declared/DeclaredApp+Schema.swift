import ConvoyJSON
import ConvoyWire

/// The tables and columns a declared app's templates name, read from the backend before the timeline: a template that
/// names one the backend lacks stops set-up with the request and the answer, instead of failing every tick of the run.
extension DeclaredApp {
    /// A table and the columns of it the file names, and where.
    struct Reference: Equatable {
        var table: String
        var columns: [String]
        var source: String
    }

    /// Every table the file reads or writes, with the columns it names there (an RPC names none).
    var references: [Reference] {
        var out: [Reference] = []
        func add(_ table: String, _ columns: [String], _ source: String) {
            guard !table.isEmpty else { return }
            out.append(Reference(table: table, columns: columns.filter { !$0.isEmpty }, source: source))
        }
        func add(_ write: DeclaredAppSpec.Write) {
            let keys = Self.topLevelKeys(write.body)
            switch write.kind {
            case .insert(let table), .upsert(let table, _), .update(let table, _): add(table, keys, write.source)
            case .select(let table, _): add(table, [], write.source)
            case .rpc: break
            }
        }
        for step in spec.setup { add(step) }
        if spec.sharesLocations {
            let (k, l, p, r) = (spec.keys, spec.links, spec.posting, spec.receiving)
            add(k.table, [k.owner, k.column] + (k.newest.map { [$0] } ?? []), "keys")
            add(k.publish)
            add(l.table, [l.columns.id, l.columns.inviter, l.columns.invitee, l.columns.status], "links")
            for step in l.steps { add(step.write) }
            add(p.table, Self.topLevelKeys(p.row), "posting.row")
            let filterColumn = String(r.filter.prefix { $0 != "=" })
            add(r.table, [r.id, r.sender, r.body, filterColumn, spec.retention.column], "receiving")
        }
        for action in spec.actions { for step in action.steps { add(step) } }
        return out
    }

    /// Reads each referenced table once as `token`'s user (`select=<columns>&limit=0`: no row, whatever the policies let
    /// it read); the first the backend refuses for a missing table or column throws, naming the file's key, the request
    /// and the answer. A refusal by policy (401, 403) is not the schema's: the run judges it.
    public func checkSchema(token: String, via http: SupabaseHTTP) async throws(SupabaseError) {
        var seen = Set<String>()
        for ref in references {
            let select = ref.columns.isEmpty ? "*" : Array(Set(ref.columns)).sorted().joined(separator: ",")
            let query = "select=\(select)&limit=0"
            guard seen.insert("\(ref.table)?\(query)").inserted else { continue }
            guard let error = await refusal(ref.table, query, token: token, via: http), let status = error.status, status == 400 || status == 404 else { continue }
            throw SupabaseError.unexpected("\(spec.file): \(ref.source) names \(ref.table)(\(ref.columns.joined(separator: ", "))), "
                                           + "which the backend lacks: GET /rest/v1/\(ref.table)?\(query) → \(error)")
        }
    }

    /// The backend's refusal of the read, nil when it answered. (A helper with a typed catch: a `catch where` in the
    /// loop above crashes Swift 6.3.1's optimiser, CopyPropagation, in a release build.)
    private func refusal(_ table: String, _ query: String, token: String, via http: SupabaseHTTP) async -> SupabaseError? {
        do throws(SupabaseError) {
            _ = try await SupabaseREST(http).select(table, query: query, token: token)
            return nil
        } catch {
            return error
        }
    }

    /// The top-level keys of a JSON template's object (a body's or a row's columns).
    static func topLevelKeys(_ template: JSONTemplate) -> [String] {
        guard let rendered = try? template.render({ _ in .string("x") }) else { return [] }
        return JSONScanner.parse(rendered)?.members.map(\.key) ?? []
    }
}
