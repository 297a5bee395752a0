import ConvoyJSON
import HTTPTypes

/// A function's named inputs, as PostgREST matches a call to `/rpc/f` against them (`findProc`): every argument given
/// must be one of them, and every one without a default must be given; otherwise it finds no function (404 PGRST202).
/// Both stores check a call against it before anything runs, PostgreSQL's from `pg_proc`, SQLite's from the heads of
/// the app's own `CREATE FUNCTION`s.
struct RPCSignature: Sendable, Equatable {
    /// Its input parameters, in order.
    var params: [String]
    /// Those without a default.
    var required: Set<String>

    func accepts(_ keys: some Collection<String>) -> Bool {
        let given = Set(keys)
        return given.isSubset(of: Set(params)) && required.isSubset(of: given)
    }

    /// PostgREST's answer to a call with `keys` that no function takes.
    static func noFunction(_ name: String, _ keys: some Collection<String>) -> APIError {
        let sorted = keys.sorted()
        let with = sorted.isEmpty ? " without parameters" : "(\(sorted.joined(separator: ", ")))"
        let searched = sorted.isEmpty ? "without parameters"
            : "with parameter\(sorted.count == 1 ? "" : "s") \(sorted.joined(separator: ", "))"
        return .postgrest(.notFound, "PGRST202", "Could not find the function public.\(name)\(with) in the schema cache",
                          details: "Searched for the function public.\(name) \(searched) or with a single unnamed json/jsonb parameter, "
                              + "but no matches were found in the schema cache.")
    }

    /// The signatures of the `CREATE [OR REPLACE] FUNCTION public.f(…)` in `script`, by name (a later one of a name
    /// replaces it, as CREATE OR REPLACE does). A parameter is `[IN | INOUT | VARIADIC] name type [DEFAULT … | = …]`;
    /// an OUT one is no input, an unnamed one cannot be given by name.
    static func read(script: String) -> [String: RPCSignature] {
        var out: [String: RPCSignature] = [:]
        for statement in SQLStatements.split(script) {
            let t = SQLTokens(statement)
            guard t.starts(with: ["CREATE", "OR", "REPLACE", "FUNCTION"]) || t.starts(with: ["CREATE", "FUNCTION"]) else { continue }
            let tokens = t.tokens
            guard let fn = tokens.firstIndex(where: { $0.upper == "FUNCTION" }), fn + 2 < tokens.count, tokens[fn + 2].text == "(",
                  let close = SQLTokens.matching(tokens, fn + 2) else { continue }
            let qualified = tokens[fn + 1].text
            guard !qualified.contains(".") || qualified.lowercased().hasPrefix("public.") else { continue }
            var signature = RPCSignature(params: [], required: [])
            for var p in SQLTokens.splitTopLevel(Array(tokens[(fn + 3)..<close])) {
                let mode = p.first?.upper ?? ""
                if mode == "OUT" { continue }
                if ["IN", "INOUT", "VARIADIC"].contains(mode) { p.removeFirst() }
                // A name, then a type: one token alone is a type without a name.
                guard p.count >= 2, let first = p.first, first.isWord || first.kind == .quoted else { continue }
                let name = first.kind == .quoted ? String(first.text.dropFirst().dropLast()) : first.text.lowercased()
                signature.params.append(name)
                if !p.contains(where: { $0.upper == "DEFAULT" || $0.text == "=" }) { signature.required.insert(name) }
            }
            out[SQLTables.sqliteName(qualified).lowercased()] = signature
        }
        return out
    }
}
