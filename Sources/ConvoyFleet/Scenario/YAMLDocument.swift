import Foundation
import Yams

/// The one way Convoy's YAML files (scenarios, battery profiles, probe
/// catalogues) are read: the text, composed into a node tree whose every
/// error is a `ScenarioError` with file, line and column.
enum YAMLDocument {
    /// The file's text; `what` names it in the error ("the catalogue").
    static func text(_ path: String, what: String = "the file") throws(ScenarioError) -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ScenarioError(file: path, line: 0, column: 0, path: "", message: "cannot read \(what) (\(error.localizedDescription))")
        }
    }

    /// The root `Reader`; `empty` says what an empty file should have held.
    static func root(_ text: String, file: String, empty: String) throws(ScenarioError) -> Reader {
        do {
            guard let node = try Yams.compose(yaml: text) else {
                throw ScenarioError(file: file, line: 1, column: 1, path: "", message: "the file is empty; \(empty)")
            }
            return Reader(file: file, node: node, path: "")
        } catch let error as ScenarioError {
            throw error
        } catch let error as YamlError {
            throw ScenarioError(file: file, line: error.line, column: error.column, path: "", message: "not valid YAML: \(error.problem)")
        } catch {
            throw ScenarioError(file: file, line: 0, column: 0, path: "", message: "not valid YAML: \(error)")
        }
    }
}
