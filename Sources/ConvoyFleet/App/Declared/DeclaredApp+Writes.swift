import ConvoyCrypto
import ConvoyJSON
import ConvoySodium
import ConvoyWire
import Foundation

/// A declared app's templated writes (`DeclaredAppSpec.Write`), made as the user whose token is given.
extension DeclaredApp {
    /// Makes `write` with the values known here (`me.id`, `friend.id`, `saved.*`, …); the answer's rows, and the
    /// values its `save` keeps, merged into `values`.
    @discardableResult
    func make(_ write: DeclaredAppSpec.Write, values: inout [String: JSONValue], token: String,
              via http: SupabaseHTTP) async throws(SupabaseError) -> [JSONValue] {
        try await made(write, values: &values, token: token, via: http).rows
    }

    /// `make`, with the bytes of the body it sent (none for a select), for the battery model.
    func made(_ write: DeclaredAppSpec.Write, values: inout [String: JSONValue], token: String,
              via http: SupabaseHTTP) async throws(SupabaseError) -> (rows: [JSONValue], bytes: Int) {
        let known = values
        let lookup = { (name: String) -> JSONValue? in known[name] ?? Self.clockValue(name) }
        let body: [UInt8]
        do {
            body = try write.body.render(lookup)
        } catch {
            throw SupabaseError(kind: .unexpectedResponse, message: "\(spec.file): \(write.source): no value for {{\(error.name)}} here")
        }
        let rest = SupabaseREST(http)
        // An admin's step (`as: service`) is made with the project's service key.
        let token = try write.asService ? serviceKey(http, write) : token
        let rows: [JSONValue]
        switch write.kind {
        case .insert(let table) where write.minimal:
            try await rest.insert(table, json: body, token: token)
            rows = []
        case .upsert(let table, let onConflict) where write.minimal:
            try await rest.upsert(table, json: body, onConflict: onConflict, token: token)
            rows = []
        case .update(let table, let filter) where write.minimal:
            try await rest.update(table, query: try fill(filter, lookup, write.source), json: body, token: token)
            rows = []
        case .insert(let table):
            rows = try await rest.insertReturning(table, json: body, token: token)
        case .upsert(let table, let onConflict):
            rows = try await rest.upsertReturning(table, json: body, onConflict: onConflict, token: token)
        case .update(let table, let filter):
            let query = try fill(filter, lookup, write.source)
            rows = try await rest.updateReturning(table, query: query, json: body, token: token)
            guard !rows.isEmpty else {
                throw SupabaseError(kind: .unexpectedResponse, message: "\(write.source): PATCH \(table)?\(query) changed no row (gone, or not visible to this user)")
            }
        case .rpc(let function):
            let result = try await rest.rpc(function, json: body, token: token)
            rows = if case .array(let a) = result { a } else { [result] }
        case .select(let table, let query):
            rows = try await rest.select(table, query: try fill(query, lookup, write.source), token: token)
            // Nothing to act on: the caller (an action) ends here.
            if rows.isEmpty, !write.save.isEmpty { return ([], 0) }
        }
        if !write.save.isEmpty {
            let first = rows.first ?? .null
            for s in write.save {
                guard let v = JSONTemplate.field(s.column, of: first), v != .null else {
                    throw SupabaseError(kind: .unexpectedResponse, message: "\(write.source): the answer has no \(s.column) to save as {{saved.\(s.name)}}")
                }
                values["saved.\(s.name)"] = v
            }
        }
        if case .select = write.kind { return (rows, 0) }
        return (rows, body.count)
    }

    /// The project's service key, for a step made `as: service`.
    private func serviceKey(_ http: SupabaseHTTP, _ write: DeclaredAppSpec.Write) throws(SupabaseError) -> String {
        guard let key = http.target.serviceKey else {
            throw SupabaseError(kind: .unexpectedResponse,
                                message: "\(spec.file): \(write.source) is made as: service and needs the project's service key (--keys-file, or --service-key with --target)")
        }
        return key
    }

    /// A PostgREST filter or query template filled (`recipient_id=eq.{{me.id}}`).
    func fill(_ template: String, _ value: (String) -> JSONValue?, _ source: String) throws(SupabaseError) -> String {
        do {
            return try Template.fill(template) { value($0).map { $0.flatText ?? $0.text } }
        } catch {
            throw SupabaseError(kind: .unexpectedResponse, message: "\(spec.file): \(source): no value for {{\(error.name)}} here")
        }
    }

    /// `now.iso`, `now.s`, `now.ms`: the phone's clock when the template is filled.
    static func clockValue(_ name: String, at time: Double? = nil) -> JSONValue? {
        let now = time ?? Date().timeIntervalSince1970
        return switch name {
        case "now.iso": .string(DeclaredPlaintext.iso(now))
        case "now.s": .number(String(Int64(now)))
        case "now.ms": .number(String(Int64(now * 1000)))
        default: nil
        }
    }

    /// The values of a user's session: `me.id`, `me.email`.
    static func me(_ session: Session) -> [String: JSONValue] {
        var v: [String: JSONValue] = ["me.id": .string(session.userID)]
        if let email = session.email { v["me.email"] = .string(email) }
        return v
    }
}

extension DeclaredAppSpec.Encoding {
    func encode(_ bytes: [UInt8]) -> String {
        switch self {
        case .base64: Base64.encode(bytes)
        case .hex: Self.hex(bytes)
        }
    }

    func decode(_ text: String) throws(CryptoError) -> [UInt8] {
        switch self {
        case .base64: return try Base64.decode(text)
        case .hex:
            // PostgreSQL's bytea text form starts `\x`.
            let digits = text.hasPrefix("\\x") ? text.utf8.dropFirst(2) : text.utf8[...]
            guard digits.count % 2 == 0 else { throw CryptoError.badKey("hex of odd length") }
            var out: [UInt8] = []
            out.reserveCapacity(digits.count / 2)
            var high: UInt8?
            for c in digits {
                guard let v = Self.nibble(c) else { throw CryptoError.badKey("not hex: \(text.prefix(16))…") }
                if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
            }
            return out
        }
    }

    private static let digits = Array("0123456789abcdef".utf8)

    static func hex(_ bytes: [UInt8]) -> String {
        var out = [UInt8](repeating: 0, count: bytes.count * 2)
        for (i, b) in bytes.enumerated() { (out[2 * i], out[2 * i + 1]) = (digits[Int(b >> 4)], digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: c - 48
        case 97...102: c - 87
        case 65...70: c - 55
        default: nil
        }
    }
}
