/// The head of a `CREATE [OR REPLACE] FUNCTION name(…)`: its name and its parameters as PostgreSQL reads them. The one
/// reader of a head for the three that need it: a policy's helpers (`SQLPolicies.sqlFunction`), a migrations folder's
/// RPCs (`SQLFunction`: each argument's type) and a call's match (`RPCSignature`: names and defaults).
///
/// A parameter is `[mode] [name] type [DEFAULT expr | = expr]` (or `name mode type`), mode `IN`, `OUT`, `INOUT` or
/// `VARIADIC`. Without a default, one word alone is a type without a name, as in PostgreSQL's grammar.
struct SQLFunctionHead: Sendable, Equatable {
    enum Mode: Sendable, Equatable { case input, output, inputOutput, variadic }

    struct Parameter: Sendable, Equatable {
        /// As PostgreSQL names it: folded to lower case unless quoted; nil for one without a name.
        var name: String?
        /// Its type as the head writes it, lowercased and without spaces (`uuid`, `uuid[]`, `doubleprecision`).
        var type: String
        var mode: Mode
        var hasDefault: Bool
    }

    /// The function's name as written (`public.f`, `f`).
    var qualified: String
    var parameters: [Parameter]
    /// The index of the `)` that closes the parameters, in the statement's tokens.
    var close: Int

    /// The parameters a call gives (all but `OUT` ones), in order.
    var inputs: [Parameter] { parameters.filter { $0.mode != .output } }

    /// Nil unless `t` is a `CREATE [OR REPLACE] FUNCTION name(…)` statement.
    init?(_ t: [SQLToken]) {
        let words = t.prefix(4).map(\.upper)
        let fn: Int
        if words.starts(with: ["CREATE", "FUNCTION"]) { fn = 1 } else if words == ["CREATE", "OR", "REPLACE", "FUNCTION"] { fn = 3 } else { return nil }
        guard fn + 2 < t.count, t[fn + 1].isWord || t[fn + 1].kind == .quoted, t[fn + 2].text == "(",
              let close = SQLTokens.matching(t, fn + 2) else { return nil }
        qualified = t[fn + 1].text
        self.close = close
        parameters = close == fn + 3 ? [] : SQLTokens.splitTopLevel(Array(t[(fn + 3)..<close])).compactMap(Self.parameter)
    }

    static let modes: [String: Mode] = ["IN": .input, "OUT": .output, "INOUT": .inputOutput, "VARIADIC": .variadic]

    static func parameter(_ tokens: [SQLToken]) -> Parameter? {
        var p = tokens
        let defaultAt = p.firstIndex { $0.upper == "DEFAULT" || $0.text == "=" }
        let hasDefault = defaultAt != nil
        if let d = defaultAt { p = Array(p[..<d]) }
        var mode = Mode.input
        if let first = p.first, first.isWord, let m = modes[first.upper], p.count >= 2 {
            mode = m
            p.removeFirst()
        } else if p.count >= 3, p[1].isWord, let m = modes[p[1].upper] {
            mode = m
            p.remove(at: 1)
        }
        guard let first = p.first else { return nil }
        // A name, then a type: one token alone is a type without a name.
        guard p.count >= 2, first.isWord || first.kind == .quoted else {
            return Parameter(name: nil, type: Self.type(p), mode: mode, hasDefault: hasDefault)
        }
        let name = first.kind == .quoted ? String(first.text.dropFirst().dropLast()) : first.text.lowercased()
        return Parameter(name: name, type: Self.type(p.dropFirst()), mode: mode, hasDefault: hasDefault)
    }

    static func type(_ tokens: some Sequence<SQLToken>) -> String {
        tokens.map(\.text).joined().lowercased()
    }
}
