import Foundation

/// Inputs on disk: a seed corpus (`Fuzz/Corpus/<target>/`), a run's reproducers, a regression folder.
public enum FuzzInputs {
    /// `path` itself when it is a file; the files in it (not hidden, sorted) when it is a folder; none otherwise.
    public static func files(at path: String) -> [String] {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { return [] }
        guard isFolder.boolValue else { return [path] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { "\(path)/\($0)" }
    }
}
