import ConvoyJSON
import Foundation
import GRDB

/// A `postgres_changes` binding: event, schema, table and an optional filter
/// (`column=eq.value` or `column=in.(a,b)`), as realtime-js sends it.
struct ChangeBinding: Sendable, Hashable {
    enum Operator: Hashable, Sendable { case eq(String), oneOf(Set<String>) }

    var event: String
    var schema: String
    var table: String
    var filter: String?
    var column: String?
    var op: Operator?
    /// The id echoed in the join reply and sent in every change's `ids`.
    var id: Int

    /// Parses a binding object from `phx_join`; the error text is the join's reason.
    init(_ object: JSONValue, schema tables: Schema) throws(BindingError) {
        event = (object["event"]?.string ?? "*").uppercased()
        guard ["INSERT", "UPDATE", "DELETE", "*"].contains(event) else { throw .init("unknown event \(event)") }
        schema = object["schema"]?.string ?? "public"
        guard schema == "public" else { throw .init("schema \(schema) is not served") }
        guard let table = object["table"]?.string, let t = tables.tables[table] else {
            throw .init("table \(object["table"]?.string ?? "(none)") is not served")
        }
        self.table = table
        filter = object["filter"]?.string.flatMap { $0.isEmpty ? nil : $0 }
        if let filter {
            guard let eq = filter.firstIndex(of: "=") else { throw .init("invalid filter \(filter)") }
            let col = String(filter[..<eq])
            guard let c = t.column(col) else { throw .init("invalid column for filter \(col)") }
            column = col
            // Operands as the column stores them (UUIDs lowercase, times normalised).
            func normal(_ raw: String) throws(BindingError) -> String {
                guard let v = try? Values.parse(raw, as: c) else { throw .init("invalid value for \(col): \(raw)") }
                return Values.filterText(v) ?? raw
            }
            let rest = filter[filter.index(after: eq)...]
            if rest.hasPrefix("eq.") {
                op = .eq(try normal(String(rest.dropFirst(3))))
            } else if rest.hasPrefix("in.("), rest.hasSuffix(")") {
                var values = Set<String>()
                for item in rest.dropFirst(4).dropLast().split(separator: ",") {
                    values.insert(try normal(String(item).trimmingCharacters(in: .whitespaces)))
                }
                op = .oneOf(values)
            } else {
                throw .init("invalid filter \(filter): Convoy serves eq and in")
            }
        }
        // Stable per parameters, as Supabase's phash of them is.
        var h: UInt32 = 2_166_136_261
        for b in "\(event)|\(schema)|\(table)|\(filter ?? "")".utf8 { h = (h ^ UInt32(b)) &* 16_777_619 }
        id = Int(h & 0x7FFF_FFFF)
    }

    struct BindingError: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// The binding as the join's reply echoes it (keys sorted).
    var echo: JSONValue {
        var e: [JSONValue.Member] = [.init("event", .string(event))]
        if let filter { e.append(.init("filter", .string(filter))) }
        e += [.init("id", JSONValue(id)), .init("schema", .string(schema)), .init("table", .string(table))]
        return .object(e)
    }

    func matches(_ change: ChangeEvent) -> Bool {
        guard change.table == table, event == "*" || event == change.type else { return false }
        guard let column, let op else { return true }
        let record = change.type == "DELETE" ? change.oldRecord : change.record
        guard let value = Values.filterText(record[column]) else { return false }
        switch op {
        case .eq(let v): return v == value
        case .oneOf(let set): return set.contains(value)
        }
    }
}

/// A committed row change, as the Realtime hub fans it out.
struct ChangeEvent: Sendable {
    var table: String
    /// INSERT, UPDATE or DELETE.
    var type: String
    /// The rows as values filters compare with.
    var record: [String: DatabaseValue]
    var oldRecord: [String: DatabaseValue]
    var commitTimestamp: String
    /// The rows as payload JSON; PostgreSQL's own JSON when the change came from
    /// there (booleans, numbers and JSON columns keep their types).
    var recordJSON: JSONValue
    var oldRecordJSON: JSONValue

    init(table: String, type: String, record: [String: DatabaseValue], oldRecord: [String: DatabaseValue],
         commitTimestamp: String) {
        self.table = table
        self.type = type
        self.record = record
        self.oldRecord = oldRecord
        self.commitTimestamp = commitTimestamp
        recordJSON = Values.object(record)
        oldRecordJSON = Values.object(oldRecord)
    }

    /// From PostgreSQL's JSON rows (`row_to_json`).
    init(table: String, type: String, recordJSON: JSONValue, oldRecordJSON: JSONValue, commitTimestamp: String) {
        self.table = table
        self.type = type
        self.recordJSON = recordJSON
        self.oldRecordJSON = oldRecordJSON
        self.commitTimestamp = commitTimestamp
        record = Self.operands(recordJSON)
        oldRecord = Self.operands(oldRecordJSON)
    }

    /// A row's members that filters can compare (`Values.fromPostgresJSON`).
    static func operands(_ row: JSONValue) -> [String: DatabaseValue] {
        var out: [String: DatabaseValue] = [:]
        for m in row.members {
            if let v = Values.fromPostgresJSON(m.value) { out[m.key] = v }
        }
        return out
    }
}
