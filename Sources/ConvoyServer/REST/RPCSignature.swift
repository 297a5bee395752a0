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
            guard let head = SQLFunctionHead(SQLTokens(statement).tokens),
                  !head.qualified.contains(".") || head.qualified.lowercased().hasPrefix("public.") else { continue }
            // An unnamed parameter cannot be given by name.
            let named = head.inputs.filter { $0.name != nil }
            out[SQLTables.sqliteName(head.qualified).lowercased()] = RPCSignature(
                params: named.compactMap(\.name), required: Set(named.filter { !$0.hasDefault }.compactMap(\.name)))
        }
        return out
    }
}
