/// A SQL file split into statements, as psql would send them: `;` ends a
/// statement except inside quotes ('…', "…", E'…'), dollar quotes ($$…$$,
/// $tag$…$tag$) and comments (-- … and nested /* … */). PostgreSQL's extended
/// protocol takes one statement at a time, so migrations go through this.
enum SQLScript {
    struct Statement: Equatable, Sendable {
        var sql: String
        /// 1-based line where the statement starts, for error messages.
        var line: Int
    }

    static func statements(_ text: String) -> [Statement] {
        let chars = Array(text.unicodeScalars)
        var out: [Statement] = []
        var current = String.UnicodeScalarView()
        var line = 1, startLine = 1, i = 0
        var started = false

        func append(_ c: Unicode.Scalar) {
            if !started, !c.properties.isWhitespace {
                started = true
                startLine = line
            }
            if started { current.append(c) }
            if c == "\n" { line += 1 }
        }
        func flush() {
            let sql = String(current).trimmingTrailingWhitespace()
            if !sql.isEmpty { out.append(Statement(sql: sql, line: startLine)) }
            current = String.UnicodeScalarView()
            started = false
        }
        /// Copies through the end of a quoted run closed by `close` (doubled to escape).
        func quoted(_ close: Unicode.Scalar, backslash: Bool) {
            append(chars[i]); i += 1
            while i < chars.count {
                let c = chars[i]
                if backslash, c == "\\", i + 1 < chars.count {
                    append(c); append(chars[i + 1]); i += 2
                    continue
                }
                append(c); i += 1
                if c == close {
                    if i < chars.count, chars[i] == close { append(chars[i]); i += 1; continue }
                    return
                }
            }
        }

        while i < chars.count {
            let c = chars[i]
            let next: Unicode.Scalar? = i + 1 < chars.count ? chars[i + 1] : nil
            switch c {
            case "-" where next == "-":
                while i < chars.count, chars[i] != "\n" { i += 1 }  // a comment is not part of any statement
            case "/" where next == "*":
                var depth = 0
                repeat {
                    if chars[i] == "/", i + 1 < chars.count, chars[i + 1] == "*" { depth += 1; i += 2; continue }
                    if chars[i] == "*", i + 1 < chars.count, chars[i + 1] == "/" { depth -= 1; i += 2; continue }
                    if chars[i] == "\n" { line += 1 }
                    i += 1
                } while depth > 0 && i < chars.count
                append(" ")  // a comment separates tokens: `int/**/PRIMARY` is `int PRIMARY`
            case "'":
                let escaped = i > 0 && (chars[i - 1] == "E" || chars[i - 1] == "e")
                    && (i < 2 || !(chars[i - 2].properties.isAlphabetic || chars[i - 2] == "_"))
                quoted("'", backslash: escaped)
            case "\"":
                quoted("\"", backslash: false)
            case "$" where i > 0 && (chars[i - 1].properties.isAlphabetic || chars[i - 1] == "_"
                                     || ("0"..."9").contains(chars[i - 1]) || chars[i - 1] == "$"):
                // Inside an identifier (`a$b`), not a dollar quote.
                append(c); i += 1
            case "$":
                // $tag$ where tag is empty or an identifier not starting with a digit.
                var j = i + 1
                while j < chars.count, chars[j].properties.isAlphabetic || chars[j] == "_" || (j > i + 1 && ("0"..."9").contains(chars[j])) {
                    j += 1
                }
                guard j < chars.count, chars[j] == "$" else { append(c); i += 1; continue }
                let tag = Array(chars[i...j])
                for t in tag { append(t) }
                i = j + 1
                while i < chars.count {
                    if chars[i] == "$", i + tag.count <= chars.count, Array(chars[i..<(i + tag.count)]) == tag {
                        for t in tag { append(t) }
                        i += tag.count
                        break
                    }
                    append(chars[i]); i += 1
                }
            case ";":
                i += 1
                flush()
            default:
                append(c); i += 1
            }
        }
        flush()
        return out
    }
}

extension String {
    func trimmingTrailingWhitespace() -> String {
        var s = Substring(self)
        while let last = s.unicodeScalars.last, last.properties.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
