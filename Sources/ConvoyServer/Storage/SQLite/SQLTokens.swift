import Foundation

/// A SQL token: a word (an identifier or keyword, qualified names kept whole: `public.users`, `auth.now`),
/// a quoted identifier, a string literal, a number, or a symbol (`(`, `)`, `,`, `::`, `<>`, `=`, …).
struct SQLToken: Sendable, Equatable {
    enum Kind: Sendable { case word, quoted, string, number, symbol }
    var text: String
    var kind: Kind

    var upper: String { kind == .word ? text.uppercased() : text }
    var isWord: Bool { kind == .word }
    var isNumber: Bool { kind == .number }

    /// Whether text written back needs a space between `a` and `b` (`id TEXT`, not `(id` or `f()`).
    static func spaced(_ a: SQLToken, _ b: SQLToken) -> Bool {
        if a.text == "(" || b.text == ")" || b.text == "," || a.text == "." || b.text == "." { return false }
        if b.text == "(", a.kind == .word, !keywordsBeforeParenthesis.contains(a.upper) { return false }
        return true
    }

    /// Keywords followed by a parenthesis with a space (`CHECK (…)`, `IN (…)`), unlike a function call.
    static let keywordsBeforeParenthesis: Set<String> = ["CHECK", "IN", "UNIQUE", "KEY", "EXISTS", "AND", "OR", "NOT", "ON",
                                                         "WHERE", "AS", "VALUES", "SELECT"]
}

/// A statement's tokens (comments already gone: `SQLScript.statements`), and the few ways of walking them
/// that reading DDL needs.
struct SQLTokens: Sendable {
    var tokens: [SQLToken]

    init(_ sql: String) {
        tokens = Self.tokenize(sql)
    }

    func starts(with words: [String]) -> Bool {
        tokens.count >= words.count && zip(tokens, words).allSatisfy { $0.upper == $1 }
    }

    static func tokenize(_ sql: String) -> [SQLToken] {
        let s = Array(sql.unicodeScalars)
        var out: [SQLToken] = []
        var i = 0
        func isWordChar(_ c: Unicode.Scalar) -> Bool { c.properties.isAlphabetic || c == "_" || ("0"..."9").contains(c) }
        while i < s.count {
            let c = s[i]
            if c.properties.isWhitespace { i += 1; continue }
            let start = i
            if c == "'" || c == "\"" {
                i += 1
                while i < s.count {
                    if s[i] == c {
                        if i + 1 < s.count, s[i + 1] == c { i += 2; continue }
                        break
                    }
                    i += 1
                }
                i = min(i + 1, s.count)
                out.append(SQLToken(text: String(String.UnicodeScalarView(s[start..<i])), kind: c == "'" ? .string : .quoted))
            } else if c == "$", let end = dollarQuoteEnd(s, at: i) {
                // $$…$$ or $tag$…$tag$: a function's body, kept whole as one string.
                i = end
                out.append(SQLToken(text: String(String.UnicodeScalarView(s[start..<i])), kind: .string))
            } else if ("0"..."9").contains(c) {
                while i < s.count, ("0"..."9").contains(s[i]) || s[i] == "." { i += 1 }
                out.append(SQLToken(text: String(String.UnicodeScalarView(s[start..<i])), kind: .number))
            } else if isWordChar(c) {
                // A word, with `.` joining the parts of a qualified name.
                while i < s.count, isWordChar(s[i]) || (s[i] == "." && i + 1 < s.count && isWordChar(s[i + 1])) { i += 1 }
                out.append(SQLToken(text: String(String.UnicodeScalarView(s[start..<i])), kind: .word))
            } else {
                let two = i + 1 < s.count ? String(String.UnicodeScalarView([c, s[i + 1]])) : ""
                if ["::", "<>", "<=", ">=", "!=", "||"].contains(two) {
                    out.append(SQLToken(text: two, kind: .symbol))
                    i += 2
                } else {
                    out.append(SQLToken(text: String(c), kind: .symbol))
                    i += 1
                }
            }
        }
        return out
    }

    /// Where the dollar-quoted string opening at `i` ends (one past its closing tag); nil when `$` opens none.
    static func dollarQuoteEnd(_ s: [Unicode.Scalar], at i: Int) -> Int? {
        var j = i + 1
        while j < s.count, s[j].properties.isAlphabetic || s[j] == "_" || (j > i + 1 && ("0"..."9").contains(s[j])) { j += 1 }
        guard j < s.count, s[j] == "$" else { return nil }
        let tag = Array(s[i...j])
        var k = j + 1
        while k + tag.count <= s.count {
            if Array(s[k..<(k + tag.count)]) == tag { return k + tag.count }
            k += 1
        }
        return nil
    }

    /// The index of the `)` that closes the `(` at `open`.
    static func matching(_ t: [SQLToken], _ open: Int) -> Int? {
        var depth = 0
        for j in open..<t.count {
            if t[j].text == "(" { depth += 1 }
            if t[j].text == ")" {
                depth -= 1
                if depth == 0 { return j }
            }
        }
        return nil
    }

    /// Elements separated by commas outside parentheses and brackets (`ARRAY['a', 'b']` is one).
    static func splitTopLevel(_ t: [SQLToken]) -> [[SQLToken]] {
        var out: [[SQLToken]] = [[]]
        var depth = 0
        for tok in t {
            if tok.text == "(" || tok.text == "[" { depth += 1 }
            if tok.text == ")" || tok.text == "]" { depth -= 1 }
            if tok.text == ",", depth == 0 { out.append([]); continue }
            out[out.count - 1].append(tok)
        }
        return out.filter { !$0.isEmpty }
    }

    /// The tokens inside an element's first parentheses (`UNIQUE (a, b)` → `a`, `b`), commas left out.
    static func parenthesized(_ e: [SQLToken]) -> [SQLToken]? {
        guard let open = e.firstIndex(where: { $0.text == "(" }), let close = matching(e, open) else { return nil }
        return e[(open + 1)..<close].filter { $0.text != "," }
    }

    /// A `DEFAULT` expression from `start`: up to the next constraint keyword at the top level.
    static func expression(_ e: [SQLToken], from start: Int) -> ([SQLToken], end: Int) {
        var j = start, depth = 0
        let stops: Set<String> = ["NOT", "NULL", "PRIMARY", "UNIQUE", "REFERENCES", "CHECK", "GENERATED", "DEFAULT", "CONSTRAINT"]
        while j < e.count {
            if depth == 0, j > start, stops.contains(e[j].upper) { break }
            if e[j].text == "(" { depth += 1 }
            if e[j].text == ")" { depth -= 1 }
            j += 1
        }
        return (Array(e[start..<j]), j)
    }

    /// A `REFERENCES t(c) [ON DELETE …]` or `CHECK (…)` clause from `start`, whole.
    static func constraint(_ e: [SQLToken], from start: Int) -> ([SQLToken], end: Int) {
        var j = start + 1
        if j < e.count, e[j].isWord, e[start].upper == "REFERENCES" { j += 1 }
        if j < e.count, e[j].text == "(", let close = matching(e, j) { j = close + 1 }
        // ON DELETE / ON UPDATE actions: CASCADE, RESTRICT, SET NULL, SET DEFAULT, NO ACTION.
        while j + 2 < e.count, e[j].upper == "ON", ["DELETE", "UPDATE"].contains(e[j + 1].upper) {
            j += 2
            if ["SET", "NO"].contains(e[j].upper) { j += 1 }
            j += 1
        }
        return (Array(e[start..<min(j, e.count)]), min(j, e.count))
    }

    /// `"name"` → `name`; a bare word as it is.
    static func unquote(_ s: String) -> String {
        guard s.count >= 2, s.hasPrefix("\""), s.hasSuffix("\"") else { return s }
        return String(s.dropFirst().dropLast()).replacingOccurrences(of: "\"\"", with: "\"")
    }

    /// `'it''s'` → `it's`; nil for anything but a string literal.
    static func stringLiteral(_ s: String) -> String? {
        guard s.count >= 2, s.hasPrefix("'"), s.hasSuffix("'") else { return nil }
        return String(s.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'")
    }
}

/// Statements of a script (`SQLScript`: quotes, dollar quotes and comments respected, comments dropped).
enum SQLStatements {
    static func split(_ script: String) -> [String] { SQLScript.statements(script).map(\.sql) }
}
