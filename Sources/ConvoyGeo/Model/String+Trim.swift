extension StringProtocol {
    /// Drops ASCII white space at both ends. Foundation's
    /// `trimmingCharacters(in: .whitespacesAndNewlines)` costs microseconds per
    /// call on Linux, which dominated GPX reading (docs/performance.md).
    var trimmedASCII: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" || $0 == "\r\n" }
        let s = self[...]
        guard let first = s.firstIndex(where: { !isSpace($0) }), let last = s.lastIndex(where: { !isSpace($0) }) else {
            return Substring()
        }
        return Substring(s[first...last])
    }
}
