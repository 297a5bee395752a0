import Logging
import PostgresNIO

/// Reads the `public` schema: tables with their columns, keys and defaults,
/// and functions with their arguments.
struct Introspection {
    let connection: PostgresConnection
    let logger: Logger

    /// A view created WITH (security_invoker = true): it reads as its caller.
    static let invokerView = "coalesce(c.reloptions, '{}') && ARRAY['security_invoker=true', 'security_invoker=on', 'security_invoker=1']"

    func read() async throws -> (Schema, [String: PostgresStore.Function]) {
        var tables: [String: Schema.Table] = [:]
        let columns = try await connection.query("""
            SELECT c.relname::text, a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                   a.attidentity::text, d.adbin IS NOT NULL
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
            LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
            WHERE n.nspname = 'public' AND (c.relkind IN ('r', 'p') OR (c.relkind = 'v' AND \(unescaped: Self.invokerView)))
            ORDER BY c.relname, a.attnum
            """, logger: logger)
        for try await (table, name, type, notNull, identity, hasDefault) in columns.decode((String, String, String, Bool, String, Bool).self) {
            var column = Schema.Column(name: name, type: Schema.ColumnType(postgres: type), nullable: !notNull)
            if !identity.isEmpty { column.defaultValue = .identity } else if hasDefault { column.defaultValue = .database }
            tables[table, default: Schema.Table(name: table, columns: [], primaryKey: "")].columns.append(column)
        }
        let keys = try await connection.query("""
            SELECT c.relname::text, a.attname::text, i.indisprimary
            FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
            WHERE n.nspname = 'public' AND i.indisunique AND i.indnatts = 1
            """, logger: logger)
        for try await (table, column, primary) in keys.decode((String, String, Bool).self) {
            if primary { tables[table]?.primaryKey = column }
            tables[table]?.unique.insert(column)
        }
        // A view runs as its owner, so RLS on its tables does not apply to whoever
        // reads it (unless security_invoker): such views are not served.
        for try await (view,) in try await connection.query("""
            SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND c.relkind IN ('v', 'm') AND NOT (c.relkind = 'v' AND \(unescaped: Self.invokerView))
            """, logger: logger).decode((String,).self) {
            logger.warning("not serving view public.\(view): it reads as its owner, bypassing RLS (create it WITH (security_invoker = true))")
        }
        var functions: [String: PostgresStore.Function] = [:]
        // Input arguments only: proargnames and proallargtypes include OUT ones, which proargmodes tells apart.
        let procs = try await connection.query("""
            SELECT p.proname::text, coalesce(p.proargnames, '{}')::text[],
                   array(SELECT format_type(t, NULL) FROM unnest(coalesce(p.proallargtypes, p.proargtypes::oid[])) t)::text[],
                   coalesce(p.proargmodes::text[], '{}'), p.proretset, p.prorettype = 'void'::regtype, p.pronargdefaults::int
            FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'public' AND p.prokind = 'f' AND p.prorettype <> 'trigger'::regtype
            ORDER BY p.oid
            """, logger: logger)
        for try await (name, argNames, argTypes, modes, returnsSet, returnsVoid, defaults)
            in procs.decode((String, [String], [String], [String], Bool, Bool, Int).self) {
            guard functions[name] == nil else {
                logger.warning("function public.\(name) is overloaded: /rpc/\(name) calls the first one only")
                continue
            }
            var arguments: [String: String] = [:]
            // The inputs in order (an unnamed one has ""): the last `pronargdefaults` of them have defaults.
            var inputs: [String] = []
            for (i, type) in argTypes.enumerated() {
                let mode = i < modes.count ? modes[i] : "i"
                guard ["i", "b", "v"].contains(mode) else { continue }
                let argName = i < argNames.count ? argNames[i] : ""
                inputs.append(argName)
                if !argName.isEmpty { arguments[argName] = type }
            }
            let required = Set(inputs.dropLast(defaults).filter { !$0.isEmpty })
            functions[name] = .init(arguments: arguments, returnsSet: returnsSet, returnsVoid: returnsVoid,
                                    signature: RPCSignature(params: inputs.filter { !$0.isEmpty }, required: required))
        }
        return (Schema(tables: tables), functions)
    }
}
