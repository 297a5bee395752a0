import ConvoyJSON
import ConvoyWire

/// A declared app's `actions:` as the phones make them (`AppAction`): each step a templated request as the phone's
/// user, values saved from one to the next.
extension DeclaredApp {
    /// The file's actions, for the run (`FleetContext.actions`).
    public var appActions: [AppAction] {
        spec.actions.map { action in
            AppAction(name: action.name, every: action.every, share: action.share) { session, n, http throws(SupabaseError) in
                try await perform(action, as: session, n: n, via: http)
            }
        }
    }

    /// Makes `action`'s steps in order as `session`'s user, the `n`th time; a select that saves and finds no row ends
    /// it with nothing acted on.
    public func perform(_ action: DeclaredAppSpec.Action, as session: Session, n: Int, via http: SupabaseHTTP) async throws(SupabaseError) -> AppAction.Outcome {
        var values = Self.me(session)
        values["action.n"] = .number(String(n))
        var outcome = AppAction.Outcome(acted: true, requests: 0, bytes: 0)
        for step in action.steps {
            outcome.requests += 1
            let (rows, bytes) = try await made(step, values: &values, token: session.accessToken, via: http)
            outcome.bytes += bytes
            if case .select = step.kind, rows.isEmpty, !step.save.isEmpty {
                outcome.acted = false
                return outcome
            }
        }
        return outcome
    }
}
