import ConvoyCrypto
import ConvoySodium
import ConvoyWire
import Foundation
import Logging

/// Runs a probe catalogue as a hostile device: every step's request as the
/// party it names, each judged by its rules (docs/probes.md). Callable from a
/// fleet run with the hostile device's account and two victims, or on its own
/// after `prepare` has signed up a cast.
public struct ProbeRunner: Sendable {
    /// The app whose backend is probed (how its cast is made, how it posts an update).
    public let app: any AppProfile
    public let target: SupabaseTarget
    public let engine: HTTPEngine
    /// The project's JWT secret, when known (tests, `convoy serve --jwt-secret`):
    /// the expired token is then signed properly. A device never has it.
    public var jwtSecret: String?
    /// The freshness window of the victim device's `ReplayCheck`.
    public var replayMaxAge: Double
    public var logger: Logger
    /// How a step waits (a repeat step's rate and `reset_after`): real time, or a test's clock moved by hand.
    public var sleep: @Sendable (Double) async -> Void = { seconds in try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1e9)) }
    /// How long a Realtime or channel probe waits for its join's reply before the probe is inconclusive.
    public var joinTimeout: Double = 10

    public init(target: SupabaseTarget, engine: HTTPEngine, jwtSecret: String? = nil, replayMaxAge: Double = 600,
                logger: Logger = Logger(label: "convoy.probes"), app: any AppProfile = GreenBoxApp()) {
        (self.target, self.engine, self.jwtSecret, self.replayMaxAge, self.logger) = (target, engine, jwtSecret, replayMaxAge, logger)
        self.app = app
    }

    /// A cast to probe with: the attacker and its three others.
    public typealias Cast = (attacker: ProbeParty, victims: ProbeVictims)

    /// Runs every probe of `catalogue`; never throws: what could not be tried is in each outcome's notes. Outcomes
    /// come in catalogue order.
    ///
    /// Each probe should find the backend as the catalogue's setup declared it, not as the probes before it left it
    /// (an attacker that approved itself earlier is no longer the unapproved reader a later probe means). A probe
    /// changes its cast when an attack of its went through (it leaked, or found something) or an action step of its
    /// wrote (an unjudged write answered 2xx). With `freshCast`, the probe after one that changed the cast gets a new
    /// cast, set up as declared (when none can be made, a sign-up limit say, the rest run on the cast as it is, and
    /// say so), and the probes that spend a limit (`Probe.spendsALimit`) run after the others (their
    /// counts, per address too, are state no fresh account undoes, and a failed-login series may close sign-ins to the
    /// address), in catalogue order. Without it (a hostile phone in a run, whose cast is the run's own phones), every
    /// probe runs on one cast, in catalogue order. Either way each outcome's `state` says which cast it ran on.
    public func run(_ catalogue: ProbeCatalogue, attacker: ProbeParty, victims: ProbeVictims,
                    freshCast: (@Sendable () async throws -> Cast)? = nil) async -> [ProbeOutcome] {
        var current = await staged(catalogue, attacker: attacker, victims: victims)
        var changedBy: String?
        // Why no fresh cast could be made (a sign-up limit, say): the probes after it run on the cast as it is, and say so.
        var noFreshCast: String?
        var outcomes: [String: ProbeOutcome] = [:]
        let order = freshCast == nil ? catalogue.probes : catalogue.probes.filter { !$0.spendsALimit } + catalogue.probes.filter(\.spendsALimit)
        for probe in order {
            var outcome = ProbeOutcome(id: probe.id, category: probe.category, description: probe.description, ifLeaked: probe.ifLeaked)
            outcome.section = probe.section
            var made: Result<Cast, any Error>?
            if let freshCast, changedBy != nil, noFreshCast == nil {
                do { made = .success(try await freshCast()) } catch { made = .failure(error) }
            }
            // What a step saves (`{{saved.…}}`) is the probe's own.
            var context: ProbeContext
            switch made {
            case .success(let cast)?:
                let staged = await staged(catalogue, attacker: cast.attacker, victims: cast.victims)
                (current, changedBy) = (staged, nil)
                (context, outcome.state) = (staged.context, ProbeOutcome.setUpCast)
                outcome.notes += staged.notes
            case .failure(let error)?:
                noFreshCast = current.context.redactor.redact("\(error)")
                fallthrough
            case nil:
                context = current.context
                outcome.notes += current.notes
                outcome.state = changedBy.map { "the cast as \($0) left it, not as set up" + (noFreshCast.map { " (no fresh cast could be made: \($0))" } ?? "") }
                    ?? ProbeOutcome.setUpCast
            }
            for step in probe.steps {
                switch step.action {
                case .request(let request) where outcome.controlFailed == true && step.leakIf == nil && step.findingIf == nil
                    && request.writes:
                    // After a control that failed, a write that can only be inconclusive is not sent: the probe's premise does
                    // not hold, and in a run it would write into a real phone's data (a release key over its own).
                    outcome.notes.append("not sent \(step.source): a write after a control that failed could only be inconclusive")
                case .request(let request): await runRequest(step, request, &context, &outcome)
                case .realtime(let realtime): await runRealtime(step, realtime, context, &outcome)
                case .replay(let replay): await runReplay(step, replay, context, &outcome)
                case .channel(let channel): await runChannel(step, channel, context, &outcome)
                case .timing(let timing): await runTiming(step, timing, context, &outcome)
                case .series(let series): await runSeries(step, series, context, &outcome)
                case .compare(let compare): await runCompare(step, compare, context, &outcome)
                case .wait(let seconds): await sleep(seconds)
                }
            }
            if outcome.leaked > 0 || outcome.findings > 0 { outcome.changedState = true }
            if outcome.changedState == true { changedBy = probe.id }
            if outcome.leaked > 0 {
                logger.error("probe leaked", metadata: ["probe": "\(probe.id)", "category": "\(probe.category)", "state": "\(outcome.state ?? "")"])
            }
            outcomes[probe.id] = outcome
        }
        return catalogue.probes.compactMap { outcomes[$0.id] }
    }

    /// A cast's context with the catalogue's setup applied, and what of the setup did not go through.
    private func staged(_ catalogue: ProbeCatalogue, attacker: ProbeParty, victims: ProbeVictims) async -> (context: ProbeContext, notes: [String]) {
        var context = await ProbeContext.make(runner: self, attacker: attacker, victims: victims)
        context.codeSpace = catalogue.codeSpace
        var notes: [String] = []
        for request in catalogue.setup {
            switch await send(request, context) {
            case .sent(let r, _) where r.status < 300 || r.status == 409: break
            case .sent(let r, _): notes.append("setup \(request.source): HTTP \(r.status) \(context.redactor.excerpt(r.body, limit: 200))")
            case .skipped(let why): notes.append("setup \(request.source): \(why)")
            case .failed(let why): notes.append("setup \(request.source): \(why)")
            }
        }
        return (context, notes)
    }

    /// `run`, as a report.
    public func report(_ catalogue: ProbeCatalogue, attacker: ProbeParty, victims: ProbeVictims,
                       freshCast: (@Sendable () async throws -> Cast)? = nil) async -> ProbeReport {
        ProbeReport(catalogue: catalogue.name, target: target.url,
                    outcomes: await run(catalogue, attacker: attacker, victims: victims, freshCast: freshCast))
    }

    // MARK: Plain requests

    func runRequest(_ step: ProbeStep, _ request: ProbeRequest, _ context: inout ProbeContext, _ outcome: inout ProbeOutcome) async {
        switch await send(request, context) {
        case .skipped(let why):
            if step.checks { outcome.notes.append("skipped \(step.source): \(why)") }
        case .failed(let why):
            if step.checks {
                outcome.tried += 1
                outcome.notes.append("inconclusive \(step.source): \(why)")
            }
        case .sent(let response, let sent):
            let now = context
            judge(step, ProbeFacts(response), now, &outcome) {
                now.evidence(step, sent, status: response.status, body: response.body, kind: $0, detail: $1)
            }
            if !step.save.isEmpty, response.status < 300 { context.save(step.save, from: response.body) }
            // An action step's write that went through changes the cast (a control's is the rightful party's own).
            if !step.checks, response.status < 300, request.writes { outcome.changedState = true }
        }
    }

    /// Applies a step's rules to what came back.
    func judge(_ step: ProbeStep, _ facts: ProbeFacts, _ context: ProbeContext, _ outcome: inout ProbeOutcome,
               evidence: (ProbeEvidence.Kind, String) -> ProbeEvidence) {
        if let requires = step.requires {
            guard facts.matches(requires, context) else {
                outcome.tried += 1
                outcome.controlFailed = true
                outcome.notes.append("inconclusive \(step.source): the control needs \(requires.summary), got \(facts.summary): nothing was tested")
                return
            }
            if outcome.controlFailed == nil { outcome.controlFailed = false }
        }
        guard step.isJudged else { return }
        outcome.tried += 1
        var why: [String] = []
        // After a failed control only what came back can leak (leak_if): a refusal, or an expectation not met,
        // says nothing when the rightful party was refused too (a broken policy, a missing table).
        let controlled = outcome.controlFailed != true
        // A refusal is "denied" only when something showed the refused thing could be done (issue 47, item 8): a control
        // that held before it (a `requires`, a subscription's or channel's control), or a step that is its own control
        // (a series' first attempts, a timing's or comparison's other side, a replay's first post).
        let shown = outcome.controlFailed == false || step.isControl || step.controlsItself
        // A server error is the server failing, not a policy refusing nor letting through: whatever the step expected,
        // nothing was tested (only what came back can leak or be a finding: leak_if, finding_if).
        let serverFailed = (500..<600).contains(facts.status)
        if let expect = step.expect, !facts.matches(expect, context), !serverFailed {
            guard controlled else {
                outcome.notes.append("inconclusive \(step.source): expected \(expect.summary), got \(facts.summary), after a control that failed")
                return
            }
            why.append("expected \(expect.summary), got \(facts.summary)")
        }
        if let leakIf = step.leakIf, facts.matches(leakIf, context) { why.append("leak_if \(leakIf.summary) held: \(facts.summary)") }
        if !why.isEmpty {
            outcome.leaked += 1
            outcome.evidence.append(evidence(.leak, why.joined(separator: "; ")))
        } else if let findingIf = step.findingIf, facts.matches(findingIf, context) {
            outcome.findings += 1
            outcome.evidence.append(evidence(.finding, "finding_if \(findingIf.summary) held: \(facts.summary)"))
        } else if serverFailed {
            outcome.notes.append("inconclusive \(step.source): the server failed (\(facts.summary)): a 5xx is never \"denied\", nothing was tested")
        } else if controlled, shown {
            outcome.denied += 1
        } else if controlled {
            outcome.notes.append("inconclusive \(step.source): refused (\(facts.summary)), but no control before it showed an allowed party "
                                 + "doing it: nothing was tested")
        } else {
            outcome.notes.append("inconclusive \(step.source): refused, but so was the rightful party before it: nothing was tested")
        }
    }

    enum Sent {
        case sent(HTTPResponse, HTTPRequest)
        case skipped(String)
        case failed(String)
    }

    func send(_ template: ProbeRequest, _ context: ProbeContext) async -> Sent {
        let request: HTTPRequest
        do {
            request = try context.build(template)
        } catch let missing as Template.Unavailable {
            return .skipped("{{\(missing.name)}} is not known for this target")
        } catch {
            return .skipped("\(error)")
        }
        do {
            let response = try await engine.send(request)
            // What a limit counted: not refusals (429) nor unauthenticated requests (401), which servers do not count.
            if response.status != 429, response.status != 401 { context.sent.add(RouteLedger.key(template.actor, request, base: context.target.url)) }
            return .sent(response, request)
        } catch {
            return .failed("transport: \(context.redactor.redact("\(error)"))")
        }
    }
}
