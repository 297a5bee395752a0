import Foundation
import HTTPTypes
import Hummingbird
import MultipartKit
import NIOCore

/// An upload's body, streamed into a file as storage-api reads it
/// (src/storage/uploader.ts `fileUploadFromRequest`): either the raw bytes
/// (Content-Type the object's type, `Cache-Control` its cache control) or
/// `multipart/form-data` as supabase-py and supabase-js send it, where the
/// first part with a file name is the object (its Content-Type, or a
/// `contentType` field before it, the type) and a `cacheControl` field sets
/// `max-age`; other files are ignored (fastify-multipart's `files: 1`).
///
/// Over `limit` bytes is `EntityTooLarge` (a declared Content-Length over it is
/// refused before anything is read); a type the bucket does not allow is
/// `InvalidMimeType`; a form without a file, cut short or malformed, or whose
/// fields and headers exceed 1 MiB, is `InvalidRequest`. A refusal while the
/// body still comes closes the connection.
struct UploadBody {
    let file: PartialFile
    let mimetype: String
    let cacheControl: String
    var size: Int { file.size }

    /// Form bytes before the file (fields, part headers, preamble) allowed.
    static let maxFormOverhead = 1 << 20

    static func read(_ request: Request, limit: Int, allowedMimeTypes: [String]?, into files: ObjectFiles) async throws -> UploadBody {
        let contentType = request.headers[.contentType] ?? ""
        if let declared = request.headers[.contentLength].flatMap(Int.init), declared > limit,
           !contentType.lowercased().hasPrefix("multipart/form-data") {
            throw StorageAPIError.entityTooLarge.closing()
        }
        if contentType.lowercased().hasPrefix("multipart/form-data") {
            return try await multipart(request, contentType: contentType, limit: limit, allowed: allowedMimeTypes, files: files)
        }
        let mimetype = contentType.isEmpty ? "application/octet-stream" : contentType
        try check(mimetype, allowed: allowedMimeTypes)
        let file = try await files.create()
        do {
            for try await chunk in request.body {
                guard file.size + chunk.readableBytes <= limit else { throw StorageAPIError.entityTooLarge.closing() }
                try await file.append(chunk)
            }
        } catch {
            await files.discard(file)
            throw error
        }
        return UploadBody(file: file, mimetype: mimetype, cacheControl: request.headers[.cacheControl] ?? "no-cache")
    }

    /// storage-api's `validateMimeType`: `type/subtype` equal to an allowed one, or `type/*`.
    static func check(_ mimetype: String, allowed: [String]?) throws(StorageAPIError) {
        guard let allowed, !allowed.isEmpty else { return }
        let parts = mimetype.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw .invalidMimeType(mimetype) }
        for a in allowed {
            let p = a.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            if p.count == 2, p[0] == parts[0], p[1] == "*" || p[1] == parts[1] { return }
        }
        throw .invalidMimeType(mimetype)
    }

    private static func multipart(_ request: Request, contentType: String, limit: Int, allowed: [String]?,
                                  files: ObjectFiles) async throws -> UploadBody {
        guard let boundary = Self.boundary(contentType) else { throw StorageAPIError.noContent().closing() }
        let form = FormState()
        let parser = MultipartParser(boundary: boundary)
        parser.onHeader = { name, value in form.header(name, value) }
        parser.onBody = { buffer in form.body(&buffer) }
        parser.onPartComplete = { form.partComplete() }
        var file: PartialFile?
        do {
            for try await chunk in request.body {
                do {
                    try parser.execute(chunk)
                } catch {
                    throw StorageAPIError.noContent("Malformed part header").closing()
                }
                if form.overhead > Self.maxFormOverhead { throw StorageAPIError.noContent("Form fields are too large").closing() }
                if file == nil, let type = form.fileType {
                    let mimetype = form.fields["contentType"] ?? type
                    try check(mimetype, allowed: allowed)
                    file = try await files.create()
                }
                let bytes = form.takeFileBytes()
                if let file, bytes.readableBytes > 0 {
                    guard file.size + bytes.readableBytes <= limit else { throw StorageAPIError.entityTooLarge.closing() }
                    try await file.append(bytes)
                }
                if form.fileComplete { break }
            }
            guard let file, form.fileComplete else {
                throw StorageAPIError.noContent(file == nil ? "No content provided" : "Unexpected end of form")
            }
            let cache = form.fields["cacheControl"].map { "max-age=\($0)" } ?? "no-cache"
            return UploadBody(file: file, mimetype: form.fields["contentType"] ?? form.fileType ?? "text/plain", cacheControl: cache)
        } catch {
            if let file { await files.discard(file) }
            throw error
        }
    }

    /// The `boundary` parameter of a multipart Content-Type (quotes removed); nil when absent or not 1–70 characters.
    static func boundary(_ contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let kv = parameter.split(separator: "=", maxSplits: 1)
            guard kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { continue }
            var value = kv[1].trimmingCharacters(in: .whitespaces)
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            return (1...70).contains(value.count) ? value : nil
        }
        return nil
    }
}

/// What the multipart parser has told so far (its callbacks are synchronous;
/// the request's task reads this between chunks).
private final class FormState {
    private var headers: [String: String] = [:]
    private var fieldName: String?
    private var fieldValue: [UInt8] = []
    private var inFile = false
    private var pending = ByteBuffer()
    /// Fields before the file, by name.
    private(set) var fields: [String: String] = [:]
    /// The file part's type once its body has begun.
    private(set) var fileType: String?
    private(set) var fileComplete = false
    /// Bytes of headers and field values so far.
    private(set) var overhead = 0

    func header(_ name: String, _ value: String) {
        overhead += name.utf8.count + value.utf8.count
        headers[name.lowercased()] = value
    }

    func body(_ buffer: inout ByteBuffer) {
        guard !fileComplete else { return }
        if fieldName == nil, !inFile { begin() }
        if inFile {
            pending.writeBuffer(&buffer)
        } else {
            overhead += buffer.readableBytes
            fieldValue.append(contentsOf: buffer.readableBytesView)
        }
    }

    func partComplete() {
        guard !fileComplete else { return }
        if fieldName == nil, !inFile { begin() }
        if inFile {
            fileComplete = true
        } else if let name = fieldName {
            fields[name] = String(decoding: fieldValue, as: UTF8.self)
        }
        headers = [:]
        fieldName = nil
        fieldValue = []
    }

    func takeFileBytes() -> ByteBuffer {
        defer { pending.clear() }
        return pending
    }

    /// A part's headers are complete: a file part (its disposition has a
    /// `filename`) or a field.
    private func begin() {
        let disposition = headers["content-disposition"] ?? ""
        let params = Dictionary(disposition.split(separator: ";").dropFirst().compactMap { p -> (String, String)? in
            let kv = p.split(separator: "=", maxSplits: 1)
            guard kv.count == 2 else { return nil }
            return (kv[0].trimmingCharacters(in: .whitespaces).lowercased(), kv[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
        }, uniquingKeysWith: { a, _ in a })
        if params["filename"] != nil || params["filename*"] != nil {
            inFile = true
            fileType = headers["content-type"] ?? "text/plain"
        } else {
            fieldName = params["name"] ?? ""
        }
    }
}
