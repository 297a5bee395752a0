import ConvoyJSON
import ConvoyTime
import Foundation
import GRDB
import Logging

/// `convoy serve --app migrations --migrations DIR`: the platform (auth, PostgREST, Realtime, Storage) around a
/// folder's SQL and nothing built in: the backend of an app declared in a file (docs/apps.md). On PostgreSQL the
/// folder is applied as any `--migrations` folder; on SQLite it is read (`MigrationsApp`): its tables, indexes,
/// row-level security and `LANGUAGE sql` functions, anything else refused at start with its file and line.
/// Its purge is the declared app's (`--purge-table`, `--purge-column`, or `--purge-function` on PostgreSQL).
struct MigrationsServer: ServerKind {
    static let appName = "migrations"

    /// An app of no tables, for what asks whether the kind is a Supabase one before a folder is read.
    static var supabaseApp: (any ServerApp)? { MigrationsApp(folder: "", tables: SQLTables.empty, rules: Policies(tables: [:]), purge: nil) }

    static var defaults: ServerDefaults { ServerDefaults(retention: nil) }
    static var servesMigrationsAlone: Bool { true }

    static func open(_ configuration: ServerConfiguration, clock: any ConvoyClock, logger: Logger) async throws -> any BackendServer {
        let app = configuration.postgresURL == nil ? try MigrationsApp.read(configuration) : MigrationsApp.onPostgres(configuration)
        return try await ReferenceServer(configuration: configuration, serving: app, clock: clock, logger: logger)
    }

    static func refuse(_ configuration: ServerConfiguration) throws(ServerConfiguration.Invalid) {
        guard configuration.migrationsDirectory != nil else {
            throw .init(description: "--app migrations serves a folder's SQL: give --migrations DIR (docs/apps.md)")
        }
        if configuration.purgeFunction != nil, configuration.postgresURL == nil {
            throw .init(description: "--purge-function needs PostgreSQL (--database postgres://…): the SQLite store runs no PL/pgSQL; purge with --purge-table and --purge-column")
        }
        if (configuration.purgeTable == nil) != (configuration.purgeColumn == nil) {
            throw .init(description: "--purge-table and --purge-column go together: the rows of the table whose column is older than --retention go")
        }
    }
}

/// How a migrations folder's rows are purged (a declared app's `retention.purge`), read typed from `appSettings`.
extension ServerConfiguration {
    /// The table whose rows older than the retention go (with `purgeColumn`).
    public var purgeTable: String? {
        get { appTexts["purge_table"] }
        set { appTexts["purge_table"] = newValue }
    }
    public var purgeColumn: String? {
        get { appTexts["purge_column"] }
        set { appTexts["purge_column"] = newValue }
    }
    /// A function the server calls at each purge, given the retention as an interval (PostgreSQL only).
    public var purgeFunction: String? {
        get { appTexts["purge_function"] }
        set { appTexts["purge_function"] = newValue }
    }
}
