/// "Did you mean": the known name nearest a misspelt one.
public enum Spelling {
    /// The name among `names` nearest to `s` (edit distance ≤ 3, case ignored), or nil.
    public static func closest(_ s: String, among names: [String]) -> String? {
        func distance(_ a: [Character], _ b: [Character]) -> Int {
            var row = Array(0...b.count)
            for (i, ca) in a.enumerated() {
                var previous = row[0]
                row[0] = i + 1
                for (j, cb) in b.enumerated() {
                    let current = row[j + 1]
                    row[j + 1] = min(row[j + 1] + 1, row[j] + 1, previous + (ca == cb ? 0 : 1))
                    previous = current
                }
            }
            return row[b.count]
        }
        let scored = names.map { ($0, distance(Array(s.lowercased()), Array($0.lowercased()))) }.min { $0.1 < $1.1 }
        return scored.flatMap { $0.1 <= 3 ? $0.0 : nil }
    }
}
