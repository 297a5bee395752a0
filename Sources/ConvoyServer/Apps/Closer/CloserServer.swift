import ConvoySodium
import ConvoyTime
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

/// `convoy serve --app closer`: Closer's pairing as closer-engineering-manual.md has it — Firebase Auth, the
/// server-mediated invite callables with their 24 h TTL and 10-attempts-an-hour accept limit, and the Firestore
/// documents pairing reads and writes under the manual's rules (`CloserRoutes`). Not a Supabase app. It keeps
/// its state in memory: a restart forgets every account, invite and couple.
public final class CloserServer: BackendServer {
    public static let appName = "closer"
    /// The manual's invite TTL.
    public static let defaultInviteTTL: Double = 24 * 3_600
    /// Firebase ID tokens last an hour.
    public static let defaultTokenTTL: Double = 3_600
    /// The project id tokens and document names carry.
    public static let project = "closer-convoy"
    /// `acceptInviteCallable`'s limit: 10 attempts per caller in a rolling hour.
    public static let acceptLimit = RateLimitRule(name: "accept_invite", routes: [RateLimitRule.Route("POST /acceptInviteCallable")!],
                                                  scope: .caller, limit: 10, window: 3_600)
    /// `createInviteCallable`'s: the manual names none, but a taken code answers ALREADY_EXISTS, so each call is a
    /// guess at a live code too; Convoy's reference server holds it to the accept limit's.
    public static let createLimit = RateLimitRule(name: "create_invite", routes: [RateLimitRule.Route("POST /createInviteCallable")!],
                                                  scope: .caller, limit: 10, window: 3_600)
    /// Firebase Auth's sign-up quota for a project: 100 accounts per address per hour (with hosted defaults only).
    public static let signUpQuota = RateLimitRule(name: "sign_ups", routes: [RateLimitRule.Route("POST /identitytoolkit.googleapis.com/v1/accounts:signUp")!],
                                                  scope: .ip, limit: 100, window: 3_600)

    public let configuration: ServerConfiguration
    let store = CloserStore()
    let routes: CloserRoutes
    let clock: any ConvoyClock
    let logger: Logger

    public var hasAPIKeys: Bool { false }

    public init(configuration: ServerConfiguration, clock: any ConvoyClock = SystemClock(),
                logger: Logger = Logger(label: "convoy.serve")) async throws {
        try configuration.validate()
        (self.configuration, self.clock, self.logger) = (configuration, clock, logger)
        // The manual's accept limit and the create limit, unless limits are off; with the hosted defaults
        // (`--rate-limits supabase`, convoy serve's), Firebase Auth's sign-up quota too. A rate-limits file may
        // set any of the three's limit and window (by name).
        var limits = RateLimits.off
        if configuration.rateLimitsEnabled {
            let hosted = configuration.rateLimits.rules.contains { RateLimits.supabase.rules.contains($0) }
            limits = RateLimits([Self.acceptLimit, Self.createLimit] + (hosted ? [Self.signUpQuota] : []))
            for given in configuration.rateLimits.rules {
                guard let i = limits.rules.firstIndex(where: { $0.name == given.name }) else { continue }
                guard given.counts == .all else {
                    throw ServerConfiguration.Invalid(description: "\(given.name): closer counts every attempt (count: all)")
                }
                (limits.rules[i].limit, limits.rules[i].window) = (given.limit, given.window)
            }
        }
        let settings = CloserSettings(passwordHash: configuration.passwordHash, bodyLimit: configuration.bodyLimit,
                                      inviteTTL: configuration.inviteTTL, questionEvery: configuration.questionEvery,
                                      outcomeDay: configuration.outcomeDay, started: clock.date,
                                      weaknesses: configuration.closerWeaknesses)
        if !settings.weaknesses.isEmpty {
            logger.warning("closer: weakened on purpose: \(settings.weaknesses.map(\.rawValue).sorted().joined(separator: ", "))")
        }
        let tokens = await CloserTokens(secret: configuration.jwtSecret ?? ServerKeys.randomSecret(), clock: clock,
                                        ttl: configuration.tokenTTL, project: Self.project)
        routes = CloserRoutes(store: store, tokens: tokens, limiter: RateLimiter(limits, clock: clock), clock: clock, settings: settings,
                              dummyHash: try configuration.passwordHash.hash(ServerKeys.randomSecret()))
        if configuration.existingCouples > 0 {
            Self.seed(configuration.existingCouples, into: store, now: clock.date, day: configuration.outcomeDay)
            logger.info("closer: \(configuration.existingCouples) existing couple(s), made over the last 120 days, for scheduledOutcomesReminder to read")
        }
    }

    /// `count` couples as a running app has them (two accounts each, no sign-in), made evenly over the last 120 days
    /// (calendar days, whatever `day` a load test gives the run's couples): the reminders of marks they passed before
    /// now (in days of `day`) count as sent, so each scan reads them all and reminds those crossing a mark at the rate a
    /// real population does (with a compressed `day`, none: they are all past 90 of its days).
    static func seed(_ count: Int, into store: CloserStore, now: Date, day: Double) {
        store.with { s in
            for i in 0..<count {
                let age = 120 * 86_400 * Double(i) / Double(max(1, count))
                let created = now.addingTimeInterval(-age)
                let (a, b) = (CloserStore.uid(), CloserStore.uid())
                var couple = CloserStore.Couple(id: CloserStore.autoID(), userIds: [a, b], inviteCode: "", createdAt: created, encryptionVersion: 2)
                couple.outcomesReminded = Set([30, 60, 90].filter { age >= Double($0) * day })
                var ua = CloserStore.User(id: a, createdAt: created), ub = CloserStore.User(id: b, createdAt: created)
                (ua.coupleId, ub.coupleId) = (couple.id, couple.id)
                (s.users[a], s.users[b], s.couples[couple.id]) = (ua, ub, couple)
            }
        }
    }

    /// FCM messages the functions sent so far, and of them delivered down a device's connection.
    public var messagesSent: (sent: Int, delivered: Int) { routes.messaging.counts }

    /// Firestore's TTL, run now: invites past their expiry go, used or not, as the TTL policy on
    /// `invites.expiresAt` deletes them (the limits' attempts age out of their windows by themselves).
    /// Returns how many went.
    @discardableResult
    public func purgeOnce() async throws -> Int {
        let now = clock.date
        let gone = store.with { s in
            let expired = s.invites.filter { $0.value.expiresAt <= now }.map(\.key)
            for code in expired { s.invites[code] = nil }
            return expired.count
        }
        if gone > 0 { logger.info("closer: \(gone) expired invite(s) deleted") }
        return gone
    }

    /// Document GETs answered so far (a phone's listened documents come down its held connection instead).
    public var documentGets: Int { routes.documentGets.count }

    /// Held Listen connections open now.
    public var listenConnections: Int { routes.listeners.count }

    /// One `scheduledOutcomesReminder` now: every couple read, each scan's cost logged (the manual's per-minute hot
    /// spot: it grows with the couples, unpaginated). How many couples it read and reminders it queued.
    @discardableResult
    public func remindOutcomesOnce() -> (couples: Int, queued: Int) {
        let started = clock.now()
        let done = routes.remindOutcomes()
        logger.info("closer: scheduledOutcomesReminder read \(done.couples) couple(s) in \(String(format: "%.2f", (clock.now() - started) * 1e3)) ms, queued \(done.queued) reminder(s)")
        return done
    }

    public func run(gracefulShutdownSignals signals: [UnixSignal] = [],
                    onReady: @escaping @Sendable (ServerKeys) async -> Void = { _ in }) async throws {
        let router = Router(context: ClientRequestContext.self)
        routes.add(to: router)
        var services: [any Service] = []
        if configuration.purgeEvery > 0 {
            services.append(PeriodicPurge(every: configuration.purgeEvery, clock: clock, logger: logger, label: "closer") { [self] in
                _ = try await purgeOnce()
            })
        }
        // The manual's two schedules: a new question for every couple each day (`assignDailyQuestion`), and the
        // per-minute scan of every couple (`scheduledOutcomesReminder`).
        services.append(PeriodicPurge(every: configuration.questionEvery, clock: clock, logger: logger, label: "closer assignDailyQuestion") { [self] in
            let made = routes.assignDailyQuestions()
            logger.info("closer: assignDailyQuestion gave \(made) couple(s) today's question")
        })
        if configuration.reminderEvery > 0 {
            services.append(PeriodicPurge(every: configuration.reminderEvery, clock: clock, logger: logger, label: "closer scheduledOutcomesReminder") { [self] in
                _ = remindOutcomesOnce()
            })
        }
        // Firestore's Listen: each phone's listeners on one held connection.
        let sockets = Router(context: RealtimeRequestContext.self)
        routes.addListen(to: sockets)
        routes.addMessaging(to: sockets)
        try await AppOwnServer.run(router, webSocketRouter: sockets, name: "closer", configuration: configuration, services: services, signals: signals,
                                   logger: logger, onReady: onReady)
    }
}

extension CloserServer: ServerKind {
    static func open(_ configuration: ServerConfiguration, clock: any ConvoyClock, logger: Logger) async throws -> any BackendServer {
        try await CloserServer(configuration: configuration, clock: clock, logger: logger)
    }

    static var defaults: ServerDefaults { ServerDefaults(retention: nil, tokenTTL: defaultTokenTTL, inviteTTL: defaultInviteTTL) }

    static var weaknessNames: [String] { CloserWeakness.allCases.map(\.rawValue) }

    static func refuse(_ configuration: ServerConfiguration) throws(ServerConfiguration.Invalid) {
        if configuration.postgresURL != nil { throw ServerConfiguration.Invalid(description: "closer keeps its state in memory: give no --database") }
        try ServerConfiguration.check("question interval", configuration.questionEvery, from: 1)
        try ServerConfiguration.check("reminder interval", configuration.reminderEvery, from: 0)
        try ServerConfiguration.check("outcome day", configuration.outcomeDay, from: 0.001)
        if !(0...2_000_000).contains(configuration.existingCouples) { throw ServerConfiguration.Invalid(description: "existing couples: from 0 to 2,000,000 (each is two accounts in memory)") }
    }
}

/// Closer's settings and weaknesses, as `convoy serve --app closer` is told them.
extension ServerConfiguration {
    /// Closer, weakened on purpose (`--weaken` with `--app closer`).
    public var closerWeaknesses: Set<CloserWeakness> {
        get { Set(weaknesses.compactMap(CloserWeakness.init(rawValue:))) }
        set { weaknesses = weaknesses.filter { CloserWeakness(rawValue: $0) == nil }.union(newValue.map(\.rawValue)) }
    }

    /// How often `assignDailyQuestion` gives every couple a new question, seconds (the manual's once a day;
    /// `--question-every` compresses the day for a load test).
    public var questionEvery: Double {
        get { appSettings["question-every"] ?? 86_400 }
        set { appSettings["question-every"] = newValue }
    }

    /// How often `scheduledOutcomesReminder` scans every couple, seconds (the manual's cron: each minute).
    public var reminderEvery: Double {
        get { appSettings["reminder-every"] ?? 60 }
        set { appSettings["reminder-every"] = newValue }
    }

    /// How long a day of a couple's age lasts for its 30/60/90-day outcome reminders, seconds (a day; `--outcome-day`
    /// compresses it for a load test, so that couples made in the run reach their marks).
    public var outcomeDay: Double {
        get { appSettings["outcome-day"] ?? 86_400 }
        set { appSettings["outcome-day"] = newValue }
    }

    /// Couples the server holds before any phone comes (`--existing-couples`): what `scheduledOutcomesReminder` reads.
    public var existingCouples: Int {
        get { Int(appSettings["existing-couples"] ?? 0) }
        set { appSettings["existing-couples"] = Double(newValue) }
    }
}
