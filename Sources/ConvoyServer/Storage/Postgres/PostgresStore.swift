import ConvoyJSON
import ConvoyTime
import Foundation
import HTTPTypes
import Logging
import NIOCore
import PostgresNIO

/// The PostgreSQL store: the platform's SQL (Storage/PostgreSQL) and the app's
/// schema and RLS policies as SQL (`Apps/<App>/`), applied at start with any
/// `--migrations`; every
/// request runs in a transaction as its role with its claims, so PostgreSQL
/// itself enforces row-level security, as Supabase's PostgREST does.
final class PostgresStore: Sendable {
    let client: PostgresClient
    /// For connections outside the pool (Realtime's LISTEN).
    let connection: PostgresConnection.Configuration
    /// The `public` schema as read at start: REST serves every table in it.
    let schema: Schema
    /// The `public` schema's functions, callable through `/rpc`.
    let functions: [String: Function]
    /// What tokens are signed with: `--jwt-secret`, or the database's own.
    let jwtSecret: String
    let clock: any ConvoyClock
    let logger: Logger

    struct Function: Sendable {
        /// Argument name → type (`format_type`).
        var arguments: [String: String]
        var returnsSet: Bool
        var returnsVoid: Bool
        /// Which arguments a call must give and may give.
        var signature: RPCSignature
    }

    private init(client: PostgresClient, connection: PostgresConnection.Configuration, schema: Schema,
                 functions: [String: Function], jwtSecret: String, clock: any ConvoyClock, logger: Logger) {
        self.client = client
        self.jwtSecret = jwtSecret
        self.connection = connection
        self.schema = schema
        self.functions = functions
        self.clock = clock
        self.logger = logger
    }

    /// Connects, applies the migrations, reads the schema. The returned store's
    /// `client` must be run (`client.run()`) for requests to be served.
    static func open(url: String, configuration: ServerConfiguration, app: any ServerApp, clock: any ConvoyClock,
                     logger: Logger) async throws -> PostgresStore {
        let target = try PostgresURL(url)
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(configuration: target.connection, id: 0, logger: logger)
        } catch {
            throw PostgresStoreError("cannot connect to \(target.redacted): \(Self.describe(error))")
        }
        do {
            let migrations = Migrations(connection: connection, app: app, logger: logger)
            try await migrations.apply(configuration)
            let (schema, functions) = try await Introspection(connection: connection, logger: logger).read()
            var secret = configuration.jwtSecret ?? ""
            if configuration.jwtSecret == nil {
                secret = try await migrations.jwtSecret(orStore: ServerKeys.randomSecret())
            }
            try? await connection.close()
            var options = PostgresClient.Configuration.Options()
            options.maximumConnections = configuration.postgresConnections
            // Supabase's sessions run in UTC: a bare date is its UTC midnight, as on SQLite, whatever zone initdb took.
            options.additionalStartupParameters = [("TimeZone", "UTC")]
            var clientConfiguration = target.client
            clientConfiguration.options = options
            return PostgresStore(client: PostgresClient(configuration: clientConfiguration, backgroundLogger: logger),
                                 connection: target.connection, schema: schema, functions: functions, jwtSecret: secret,
                                 clock: clock, logger: logger)
        } catch {
            try? await connection.close()
            throw error
        }
    }

    // MARK: - Transactions

    /// Runs `body` in a transaction as the server's own user (auth, the purge),
    /// with `auth.now()` the server's clock. Database errors become PostgREST's
    /// responses; requests go through `request` instead.
    @discardableResult
    func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await client.withConnection { connection in
                try await connection.query("BEGIN", logger: logger)
                do {
                    try await connection.query("SELECT set_config('request.now', \(Timestamps.format(clock.date)), true)", logger: logger)
                    let value = try await body(connection)
                    try await connection.query("COMMIT", logger: logger)
                    return value
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
            }
        } catch {
            throw Self.translate(error, role: .serviceRole)
        }
    }

    /// One API request as one statement (one round trip): `auth.request` acts
    /// as `who`'s role with its claims at the server's time, in the
    /// statement's own transaction, and runs `statement` with `params` as
    /// `$1[1]`, `$1[2]`, … Returns its text (JSON). Database errors become
    /// PostgREST's responses.
    func request(_ statement: String, _ params: [String], as who: Principal) async throws -> String? {
        var binds = PostgresBindings()
        binds.append(who.role.rawValue)
        binds.append(who.claimsJSON)
        binds.append(Timestamps.format(clock.date))
        binds.append(statement)
        binds.append(params)
        do {
            // On a connection leased for the statement: it goes back to the pool however the
            // statement ends (a query that failed while its rows streamed kept its connection
            // now and then, and a pool of one then served nobody).
            return try await client.withConnection { connection in
                try await Self.text(connection, PostgresQuery(unsafeSQL: "SELECT auth.request($1, $2, $3, $4, $5)", binds: binds),
                                    logger: logger)
            }
        } catch {
            throw Self.translate(error, role: who.role)
        }
    }

    /// The one text value of a query's first row (JSON from `json_agg` and the like).
    static func text(_ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger) async throws -> String? {
        for try await (value,) in try await connection.query(query, logger: logger).decode((String?).self) {
            return value
        }
        return nil
    }

    // MARK: - Errors

    /// A PostgreSQL error as PostgREST reports it: SQLSTATE as `code`, the
    /// server's message, detail and hint, and PostgREST's status for the code.
    static func translate(_ error: any Error, role: Principal.Role) -> any Error {
        if error is APIError { return error }
        guard let e = error as? PSQLError else { return error }
        guard let info = e.serverInfo, let code = info[.sqlState] else {
            return APIError.postgrest(.serviceUnavailable, "PGRST001", "Database client error. Retrying the connection.",
                                      details: Self.describe(error))
        }
        return APIError.postgrest(status(code, role: role), code, info[.message] ?? "database error",
                                  details: info[.detail], hint: info[.hint])
    }

    /// PostgREST's table of SQLSTATE → HTTP status.
    static func status(_ code: String, role: Principal.Role) -> HTTPTypes.HTTPResponse.Status {
        // PostgREST's own: a function raising SQLSTATE PTxyz answers HTTP xyz (PT429: a limit in a trigger).
        if code.count == 5, code.hasPrefix("PT"), let n = Int(code.dropFirst(2)), (400...599).contains(n) {
            return HTTPTypes.HTTPResponse.Status(code: n)
        }
        switch code {
        case "42501": return role == .anon ? .unauthorized : .forbidden
        case "23503", "23505", "40001": return .conflict
        case "42883", "42P01": return .notFound
        case "P0001": return .badRequest
        case "25006": return .methodNotAllowed
        case "42P17": return .internalServerError
        default: break
        }
        switch code.prefix(2) {
        case "08", "53": return .serviceUnavailable
        case "0L", "0P", "28": return .forbidden
        case "54": return .contentTooLarge
        case "09", "25", "2D", "38", "39", "3B", "40", "55", "57", "58", "F0", "HV", "P0", "XX": return .internalServerError
        default: return .badRequest
        }
    }

    /// A PostgreSQL error in words (PSQLError's own description hides the server's message).
    static func describe(_ error: any Error) -> String {
        guard let e = error as? PSQLError else { return "\(error)" }
        if let info = e.serverInfo {
            return [info[.sqlState], info[.message], info[.detail]].compactMap { $0 }.joined(separator: ": ")
        }
        return e.underlying.map { "\($0)" } ?? "\(e.code)"
    }
}

/// Why the PostgreSQL store could not start, in words for the user.
struct PostgresStoreError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Principal {
    /// `request.jwt.claims` for this principal, as PostgREST sets it.
    var claimsJSON: String {
        var claims: [String: JSONValue] = ["role": .string(role.rawValue)]
        if let userID { claims["sub"] = .string(userID) }
        if let sessionID { claims["session_id"] = .string(sessionID) }
        if let email { claims["email"] = .string(email) }
        return JSONValue(claims).text
    }
}

/// A `postgres://user:password@host:port/database?sslmode=…` URL (also
/// `postgresql://`; `?host=/dir` for a Unix socket directory).
struct PostgresURL {
    var connection: PostgresConnection.Configuration
    var client: PostgresClient.Configuration
    /// The URL without its password, for messages.
    var redacted: String

    init(_ text: String) throws {
        guard let url = URLComponents(string: text), ["postgres", "postgresql"].contains(url.scheme ?? "") else {
            throw ServerConfiguration.Invalid(description: "--database: not a postgres:// URL")
        }
        let user = url.percentEncodedUser?.removingPercentEncoding ?? "postgres"
        let password = url.percentEncodedPassword?.removingPercentEncoding
        let database = String(url.path.dropFirst()).removingPercentEncoding.flatMap { $0.isEmpty ? nil : $0 }
        let query = Dictionary((url.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let port = url.port ?? Int(query["port"] ?? "") ?? 5432
        var redactedURL = url
        if password != nil { redactedURL.password = "***" }
        redacted = redactedURL.string ?? "postgres://…"
        if let socketDirectory = query["host"], socketDirectory.hasPrefix("/") {
            let path = "\(socketDirectory)/.s.PGSQL.\(port)"
            connection = .init(unixSocketPath: path, username: user, password: password, database: database)
            client = .init(unixSocketPath: path, username: user, password: password, database: database)
            return
        }
        guard let host = url.host, !host.isEmpty else {
            throw ServerConfiguration.Invalid(description: "--database: the URL names no host")
        }
        // libpq's meanings: prefer and require encrypt without checking the
        // certificate; verify-ca checks the chain; verify-full also the host name.
        let mode = query["sslmode"] ?? "prefer"
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        switch mode {
        case "prefer", "allow", "require": tlsConfiguration.certificateVerification = .none
        case "verify-ca": tlsConfiguration.certificateVerification = .noHostnameVerification
        default: break
        }
        let tls: (PostgresConnection.Configuration.TLS, PostgresClient.Configuration.TLS)
        switch mode {
        case "disable": tls = (.disable, .disable)
        case "prefer", "allow": tls = (.prefer(try NIOSSLContext(configuration: tlsConfiguration)), .prefer(tlsConfiguration))
        case "require", "verify-ca", "verify-full":
            tls = (.require(try NIOSSLContext(configuration: tlsConfiguration)), .require(tlsConfiguration))
        case let other:
            throw ServerConfiguration.Invalid(
                description: "--database: sslmode \(other) is not one of disable, allow, prefer, require, verify-ca, verify-full")
        }
        connection = .init(host: host, port: port, username: user, password: password, database: database, tls: tls.0)
        client = .init(host: host, port: port, username: user, password: password, database: database, tls: tls.1)
    }
}
