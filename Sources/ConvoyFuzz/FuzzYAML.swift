import ConvoyFleet
import ConvoyMetrics

/// The YAML a user writes (Yams, then Convoy's strict reading): scenarios, probe catalogues, declared apps.
/// Each refusal is a `ScenarioError`, which must name the file and a place in it, and say something.
enum FuzzYAML {
    static let scenario = target(
        "scenario", "scenario YAML (thresholds, durations, groups …); a refusal names the file and a line within it, "
            + "a scenario read has at least one phone and finite threshold limits",
        read: ScenarioFile.parse
    ) { s, inv in
        inv.expect(s.deviceCount > 0, "a scenario of \(s.deviceCount) phones")
        inv.expect(s.thresholds.allSatisfy { $0.limit.isFinite }, "a threshold with a limit that is not finite")
    }

    static let probes = target(
        "probes", "probe catalogue YAML; a refusal names the file and a line within it, a catalogue read has probes with "
            + "distinct ids",
        read: ProbeCatalogueFile.parse
    ) { c, inv in
        inv.expect(Set(c.probes.map(\.id)).count == c.probes.count, "two probes with one id")
    }

    static let app = target(
        "app", "declared-app YAML (convoy run --app); a refusal names the file and a line within it",
        read: AppFile.parse
    ) { spec, inv in
        inv.expect(!spec.name.isEmpty, "an app without a name")
    }

    /// A target over one of the YAML readers: what it reads holds `holds`, what it refuses is `placed`.
    private static func target<T>(_ name: String, _ summary: String, read: @escaping @Sendable (String, String) throws(ScenarioError) -> T,
                                  holds: @escaping @Sendable (T, inout Invariants) -> Void) -> FuzzTarget {
        FuzzTarget(name: name, summary: summary) { bytes in
            var inv = Invariants()
            let text = bytes.text
            do throws(ScenarioError) {
                let value = try read(text, "fuzz.yaml")
                inv.accepted = true
                holds(value, &inv)
            } catch {
                placed(error, in: text, &inv)
            }
            return inv
        }
    }

    /// A refusal a user can act on: this file, a line that exists (0: the file as a whole), a message.
    static func placed(_ error: ScenarioError, in text: String, _ inv: inout Invariants) {
        let lines = yamlLines(text)
        inv.expect(error.file == "fuzz.yaml", "an error naming \(error.file)")
        inv.expect((0...lines + 1).contains(error.line) && error.column >= 0, "an error at line \(error.line) of \(lines)")
        inv.expect(!error.message.isEmpty, "an error with no message at \(error.line):\(error.column)")
    }

    /// Lines as YAML (libyaml, so Yams and Convoy's errors) counts them, and editors show them: a line ends at LF,
    /// CR LF, a lone CR, NEL, LS or PS. (Counting LFs alone undercounts a file with lone CRs: the target's first run
    /// took Convoy's right line 44 of such a file for a line past its end.)
    static func yamlLines(_ text: String) -> Int {
        var lines = 1
        var previous: Unicode.Scalar?
        for s in text.unicodeScalars {
            switch s {
            case "\n": if previous != "\r" { lines += 1 }
            case "\r", "\u{85}", "\u{2028}", "\u{2029}": lines += 1
            default: break
            }
            previous = s
        }
        return lines
    }
}
