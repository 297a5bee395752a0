import ConvoyJSON
import Foundation
import GRDB

/// Files no row names any more: an app's purge written in SQL (Survale's on
/// PostgreSQL) deletes `storage.objects` rows but cannot unlink their bytes,
/// so after each retention purge the server unlinks every version file whose
/// row is gone. Files younger than a minute are left alone (an upload renames
/// its file into place as its row commits).
extension ObjectStorage {
    /// Unlinks orphaned version files; how many went.
    @discardableResult
    func sweepOrphans(minimumAge: Double = 60) async throws -> Int {
        let candidates = files.versions(olderThan: minimumAge)
        var removed = 0
        for start in stride(from: 0, to: candidates.count, by: 500) {
            let page = Array(candidates[start..<min(start + 500, candidates.count)])
            let known = try await catalog.knownVersions(page)
            for version in page where !known.contains(version) {
                await files.remove(version)
                removed += 1
            }
        }
        return removed
    }
}

extension ObjectFiles {
    /// The versions on disk whose files were last written more than `seconds` ago.
    func versions(olderThan seconds: Double) -> [String] {
        let dir = root.appendingPathComponent("objects")
        let fm = FileManager.default
        let cutoff = Date().addingTimeInterval(-seconds)
        return ((try? fm.contentsOfDirectory(atPath: dir.path)) ?? []).filter { name in
            let modified = (try? fm.attributesOfItem(atPath: dir.appendingPathComponent(name).path))?[.modificationDate] as? Date
            return modified.map { $0 < cutoff } ?? false
        }
    }
}

extension SQLiteObjectCatalog {
    func knownVersions(_ versions: [String]) async throws -> Set<String> {
        guard !versions.isEmpty else { return [] }
        return try await store.pool.read { db in
            let marks = versions.map { _ in "?" }.joined(separator: ", ")
            return Set(try String.fetchAll(db, sql: "SELECT version FROM storage_objects WHERE version IN (\(marks))",
                                           arguments: StatementArguments(versions)))
        }
    }
}

extension PostgresObjectCatalog {
    func knownVersions(_ versions: [String]) async throws -> Set<String> {
        guard !versions.isEmpty else { return [] }
        let text = try await store.request("""
            SELECT coalesce(json_agg(version), '[]')::text FROM storage.objects
             WHERE version = ANY (ARRAY(SELECT json_array_elements_text($1[1]::json)))
            """, [JSONValue(versions).text], as: .service)
        return Set(text.flatMap { JSONScanner.parse($0)?.strings } ?? [])
    }
}
