import ConvoyMetrics
import Yams

/// The template language's YAML side (docs/templates.md), one reader for probe catalogues and declared apps.
extension Reader {
    /// JSON from YAML: plain scalars keep their YAML type, quoted ones are strings; `check` is given each string
    /// (to refuse a placeholder its file may not use).
    func jsonTemplate(_ check: (Reader) throws(ScenarioError) -> Void) throws(ScenarioError) -> JSONTemplate {
        switch node {
        case .scalar(let s):
            if s.style == .plain || s.style == .any {
                if s.string == "null" || s.string == "~" { return .null }
                if s.string == "true" || s.string == "false" { return .bool(s.string == "true") }
                if Double(s.string) != nil, s.string.allSatisfy({ $0.isNumber || "-.eE+".contains($0) }) { return .number(s.string) }
            }
            try check(self)
            return .string(s.string)
        case .sequence:
            return .array(try sequence().map { (r) throws(ScenarioError) -> JSONTemplate in try r.jsonTemplate(check) })
        case .mapping(let m):
            var out: [JSONTemplate.Member] = []
            for (k, v) in m {
                let key = k.string ?? ""
                out.append(.init(key, try Reader(file: file, node: v, path: child(key)).jsonTemplate(check)))
            }
            return .object(out)
        case .alias:
            throw error("aliases are not supported in templates")
        }
    }

    /// Text whose `{{placeholders}}` each pass `known` (or are `Template`'s built-ins); `names` are offered as
    /// guesses, `docs` named for the full list.
    func template(known: (String) -> Bool, names: [String], docs: String) throws(ScenarioError) -> String {
        let s = try string()
        for name in Template.placeholders(in: s) where !(known(name) || Template.isBuiltIn(name)) {
            var message = "unknown placeholder {{\(name)}}"
            if let guess = Spelling.closest(name, among: names) { message += "; did you mean {{\(guess)}}?" }
            throw error(message + " (see \(docs))")
        }
        return s
    }
}
