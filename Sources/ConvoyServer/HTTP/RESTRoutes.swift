import ConvoyJSON
import HTTPTypes
import Hummingbird

/// `/rest/v1`: PostgREST's table and RPC routes.
struct RESTRoutes: Sendable {
    let rest: any TableStore
    let support: RequestSupport

    func add(to router: Router<ClientRequestContext>) {
        let group = router.group("rest/v1")
        group.post("rpc/{function}") { request, context in
            let name = try context.parameters.require("function")
            let who = try await support.principal(request)
            // No body is no arguments; a body that is not a JSON object is an error.
            let args: [String: JSONValue]
            if request.headers[.contentLength].flatMap(Int.init) ?? 0 == 0, request.headers[.transferEncoding] == nil {
                args = [:]
            } else {
                guard let object = try await support.json(request).dictionary else {
                    throw APIError.postgrest(.badRequest, "PGRST102", "RPC arguments must be a JSON object")
                }
                args = object
            }
            return JSONResponse.make(.ok, try await rest.rpc(name, args, as: who))
        }
        // HEAD: the same query, headers only (supabase-js `select(…, { head: true, count })`).
        group.head("{table}") { request, context in
            let (t, who, q) = try await prepare(request, context)
            let (rows, total) = try await rest.select(t, q, as: who, countExact: RequestSupport.prefer(request)["count"] == "exact")
            let headers: HTTPFields = [.contentType: "application/json; charset=utf-8",
                                       .contentRange: Self.contentRange(rows.objects.count, total: total, offset: q.offset)]
            return JSONResponse.empty(.ok, headers: headers)
        }
        group.get("{table}") { request, context in
            let (t, who, q) = try await prepare(request, context)
            let (rows, total) = try await rest.select(t, q, as: who, countExact: RequestSupport.prefer(request)["count"] == "exact")
            let headers: HTTPFields = [.contentRange: Self.contentRange(rows.objects.count, total: total, offset: q.offset)]
            if request.headers[.accept]?.contains("application/vnd.pgrst.object+json") == true {
                guard rows.objects.count == 1 else {
                    throw APIError.postgrest(.notAcceptable, "PGRST116", "JSON object requested, multiple (or no) rows returned",
                                             details: "The result contains \(rows.objects.count) rows")
                }
                return JSONResponse.make(.ok, rows.objects[0], headers: headers)
            }
            return JSONResponse.make(.ok, .array(rows.objects), headers: headers)
        }
        group.post("{table}") { request, context in
            let (t, who, q) = try await prepare(request, context)
            let body = try await support.json(request)
            let prefer = RequestSupport.prefer(request)
            let resolution = prefer["resolution"]
            let rows = try await rest.insert(t, body: body, q, as: who,
                                             upsert: resolution == "merge-duplicates" || resolution == "ignore-duplicates",
                                             ignoreDuplicates: resolution == "ignore-duplicates",
                                             returning: prefer["return"] == "representation", missingDefault: prefer["missing"] == "default")
            return respond(rows, prefer: prefer, status: .created, request: request)
        }
        group.patch("{table}") { request, context in
            let (t, who, q) = try await prepare(request, context)
            let prefer = RequestSupport.prefer(request)
            let rows = try await rest.update(t, body: try await support.json(request), q, as: who,
                                             returning: prefer["return"] == "representation")
            return respond(rows, prefer: prefer, status: .ok, request: request)
        }
        group.delete("{table}") { request, context in
            let (t, who, q) = try await prepare(request, context)
            let prefer = RequestSupport.prefer(request)
            let rows = try await rest.delete(t, q, as: who, returning: prefer["return"] == "representation")
            return respond(rows, prefer: prefer, status: .ok, request: request)
        }
    }

    /// The table, who asks, and the parsed query of a table request.
    private func prepare(_ request: Request, _ context: ClientRequestContext) async throws -> (Schema.Table, Principal, RESTQuery) {
        let t = try rest.table(try context.parameters.require("table"))
        let who = try await support.principal(request)
        return (t, who, try RESTQuery(items: RequestSupport.queryItems(request), table: t))
    }

    /// PostgREST's `Content-Range`: `first-last/total`, `*/total` when empty, `*` for an uncounted total.
    static func contentRange(_ count: Int, total: Int?, offset: Int?) -> String {
        let first = offset ?? 0
        let of = total.map(String.init) ?? "*"
        return count == 0 ? "*/\(of)" : "\(first)-\(first + count - 1)/\(of)"
    }

    /// `return=representation` sends the rows; otherwise 201/204 with no body.
    private func respond(_ rows: JSONRows, prefer: [String: String], status: HTTPResponse.Status,
                         request: Request) -> Response {
        guard prefer["return"] == "representation" else {
            return JSONResponse.empty(status == .created ? .created : .noContent)
        }
        if request.headers[.accept]?.contains("application/vnd.pgrst.object+json") == true, rows.objects.count == 1 {
            return JSONResponse.make(status, rows.objects[0])
        }
        return JSONResponse.make(status, .array(rows.objects))
    }
}
