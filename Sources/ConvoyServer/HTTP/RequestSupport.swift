import ConvoyJSON
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension HTTPField.Name {
    static let apikey = HTTPField.Name("apikey")!
    static let prefer = HTTPField.Name("Prefer")!
    static let contentRange = HTTPField.Name("Content-Range")!
}

/// What every handler needs from a request.
struct RequestSupport: Sendable {
    let tokens: TokenService
    let bodyLimit: Int

    /// The body as JSON, within the size limit. `gotrue` picks the error shape.
    func json(_ request: Request, gotrue: Bool = false) async throws -> JSONValue {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > bodyLimit {
            throw tooLarge(gotrue)
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: bodyLimit)
        } catch {
            throw tooLarge(gotrue)
        }
        guard let value = BodyJSON.parse(buffer.readableBytesView) else {
            throw gotrue ? APIError.gotrue(.badRequest, "bad_json", "Could not parse request body as JSON")
                         : APIError.postgrest(.badRequest, "PGRST102", "Empty or invalid json")
        }
        return value
    }

    private func tooLarge(_ gotrue: Bool) -> APIError {
        gotrue ? .gotrue(.contentTooLarge, "request_too_large", "Request body is larger than \(bodyLimit) bytes")
               : .postgrest(.contentTooLarge, "PGRST413", "Payload Too Large", details: "the limit is \(bodyLimit) bytes")
    }

    /// Who the request acts as: the bearer token's claims, else the apikey's.
    /// Bad or expired tokens are PostgREST's 401s (GoTrue's shape for auth routes).
    func principal(_ request: Request, gotrue: Bool = false) async throws -> Principal {
        let bearer = request.headers[.authorization].flatMap { h -> String? in
            let parts = h.split(separator: " ", maxSplits: 1)
            return parts.count == 2 && parts[0].lowercased() == "bearer" ? String(parts[1]) : nil
        }
        guard let token = bearer ?? apikey(request) else { return .anonymous }
        let claims: Claims
        do {
            claims = try await tokens.verify(token)
        } catch .expired {
            throw gotrue ? APIError.gotrue(.unauthorized, "bad_jwt", "invalid JWT: unable to parse or verify signature, token has invalid claims: token is expired")
                         : APIError.postgrest(.unauthorized, "PGRST303", "JWT expired")
        } catch {
            throw gotrue ? APIError.gotrue(.unauthorized, "bad_jwt", "invalid JWT: unable to parse or verify signature")
                         : APIError.postgrest(.unauthorized, "PGRST301", "JWSError JWSInvalidSignature")
        }
        guard let principal = Principal(claims: claims) else {
            throw APIError.postgrest(.unauthorized, "PGRST301", "JWT role \(claims.role) without a valid subject is not a role here")
        }
        return principal
    }

    func apikey(_ request: Request) -> String? {
        request.headers[.apikey] ?? request.uri.queryParameters["apikey"].map(String.init)
    }

    /// Query items in order, percent-decoded, duplicates kept.
    static func queryItems(_ request: Request) -> [(String, String)] {
        guard let query = request.uri.query, !query.isEmpty else { return [] }
        return query.split(separator: "&").map { pair in
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String {
                String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(s)
            }
            return (decode(kv[0]), kv.count > 1 ? decode(kv[1]) : "")
        }
    }

    /// `Prefer` tokens: `return=representation`, `count=exact`, … as a dictionary.
    static func prefer(_ request: Request) -> [String: String] { preferences(request.headers[values: .prefer]) }

    /// The tokens of `Prefer` header fields; a later one wins, a token without `=` is left out.
    static func preferences(_ fields: [String]) -> [String: String] {
        // Optional whitespace around each token (RFC 9110 §5.6.1): spaces and tabs.
        func isSpace(_ b: UInt8) -> Bool { b == UInt8(ascii: " ") || b == UInt8(ascii: "\t") }
        var out: [String: String] = [:]
        for field in fields {
            for token in field.utf8.split(separator: UInt8(ascii: ",")) {
                guard let start = token.firstIndex(where: { !isSpace($0) }), let end = token.lastIndex(where: { !isSpace($0) })
                else { continue }
                let kv = token[start...end].split(separator: UInt8(ascii: "="), maxSplits: 1)
                if kv.count == 2 { out[String(decoding: kv[0], as: UTF8.self)] = String(decoding: kv[1], as: UTF8.self) }
            }
        }
        return out
    }
}

/// JSON responses.
enum JSONResponse {
    static func make(_ status: HTTPResponse.Status, _ value: JSONValue, headers: HTTPFields = [:]) -> Response {
        var h = headers
        h[.contentType] = "application/json; charset=utf-8"
        var out: [UInt8] = []
        out.reserveCapacity(256)
        value.write(into: &out)
        return Response(status: status, headers: h, body: .init(byteBuffer: ByteBuffer(bytes: out)))
    }

    static func empty(_ status: HTTPResponse.Status, headers: HTTPFields = [:]) -> Response {
        Response(status: status, headers: headers)
    }
}
