import ConvoyMetrics
import Foundation
import Yams

/// The app a scenario runs (`app:`), and the keys that need one of its modes.
extension Reader {
    /// `app: greenbox`, or `app: {name: greenbox, payload: prd}`: one of
    /// `Apps.names`, with the modes that app has.
    func app() throws(ScenarioError) -> AppChoice {
        if case .scalar = node { return AppChoice(name: try appName()) }
        guard case .mapping(let raw) = node else { throw error("expected an app name (app: greenbox) or a mapping (app: {name: greenbox, …})") }
        if let fileNode = raw.first(where: { $0.key.string == "file" }) {
            _ = try mapping(["file"])
            return AppChoice(declared: try Reader(file: file, node: fileNode.value, path: child("file")).appFile())
        }
        // The name first: it decides which other keys are allowed.
        guard let nameNode = raw.first(where: { $0.key.string == "name" }) else {
            throw error("app needs a name (apps: \(Apps.names.joined(separator: ", "))) or a file (app: {file: apps/mine.yaml}, docs/apps.md)")
        }
        let name = try Reader(file: file, node: nameNode.value, path: child("name")).appName()
        let modes = Apps.modes(of: name) ?? []
        let m = try mapping(["name"] + modes.map(\.option))
        var options: [String: String] = [:]
        for (option, values) in modes {
            guard let r = m[option] else { continue }
            let value = try r.string()
            guard values.contains(value) else {
                var message = "\(name) has no \(option) \"\(value)\" (\(option): \(values.joined(separator: ", ")))"
                if let guess = Spelling.closest(value, among: values) { message += "; did you mean \"\(guess)\"?" }
                throw r.error(message)
            }
            options[option] = value
        }
        return AppChoice(name: name, options: AppOptions(options))
    }

    /// The app, checked against the keys that need one of its modes.
    func checkedApp(_ m: [String: Reader]) throws(ScenarioError) -> AppChoice {
        let choice = try m["app"]?.app() ?? AppChoice()
        let pairsDuringRun = choice.profile?.pairsDuringRun ?? false
        // Couples' probes (Closer's) guess codes and write documents: they need no friend of a friend made in set-up.
        let couples = choice.profile?.friendsAreCouples ?? false
        if choice.declared != nil, let migration = m["migration"] {
            throw migration.error("migration: a declared app has no invitation to re-pair after a reinstall yet (docs/apps.md)")
        }
        if let spec = choice.declared, !spec.sharesLocations {
            // An app of actions alone: no friends, no location rows to keep or probe.
            for key in ["social", "retention", "hostile"] where m[key] != nil {
                throw m[key]!.error("`\(key)` does nothing for app \(spec.name): its phones share no locations and have no friends (\(spec.file) declares actions alone)")
            }
        }
        if let spec = choice.declared, spec.group != nil { try checkDeclaredGroup(m, spec) }
        if let social = m["social"], let later = try social.mapping(Self.socialKeys)["accept_later"],
           !pairsDuringRun, try later.fraction() > 0 {
            throw later.error("accept_later needs friends who pair during the run (app: {name: \(choice.name), pairing: prd}); "
                              + "with invite codes, decide-later invitations stay pending")
        }
        // With pairing during the run a reinstall asks each friend again as the app asks (Green Box `pairing: prd`: PRD
        // §4.1's re-acceptance); hostile phones wait for their cast to pair (FleetRun.castPaired).
        let social = try m["social"]?.mapping(Self.socialKeys)
        try checkShapeKeys(m, social: social, app: choice, couples: couples)
        for key in ["question_every", "outcome_day", "reminder_every", "existing_couples"] where !couples {
            if let q = social?[key] {
                throw q.error("\(key) sets Closer's \(key == "question_every" ? "daily question" : "outcome reminders"); \(choice.name) has none")
            }
        }
        if couples {
            // One partner each: a second invite would be refused (the phone is in a couple already).
            let friends = social?["friends"]
            if try friends?.string() != "1" {
                throw (friends ?? m["social"] ?? self).error("\(choice.name) pairs couples: give social.friends: 1")
            }
            for g in try m["groups"]?.sequence() ?? [] {
                let keys = try g.mapping(Self.groupKeys)
                if let key = ["photo_every", "photo_size"].first(where: { keys[$0] != nil }), let r = keys[key] {
                    throw r.error("\(key): \(choice.name)'s phones send no photos (their messages are answers to the daily question: message_every)")
                }
            }
        }
        return choice
    }

    /// A group's keys for where a phone is and what it shares of it: nothing for an app that shares no locations.
    static let locationKeys = ["tracks", "replay", "accuracy", "correlation_time", "cadence", "background_share", "precise_share",
                               "location_mode", "when_in_use_share", "background_mode", "key_lookup", "key_cache_ttl", "general",
                               "laplace_mean", "gps_denied"]
    /// What a pairwise app does with each friend: a friend's key read before sealing, a per-friend preference and its fuzzing.
    static let pairwiseKeys = ["key_lookup", "key_cache_ttl", "precise_share", "general", "laplace_mean"]


    /// A declared group app has its location broadcast, presence and its groups' create, join and end steps; the group
    /// shape's other rooms (Survale's chat, media, archive and replay, direct messages, joining by request, leaving,
    /// auto-end, what a group leaves to purge) are not declarable yet, so the keys that would run them are refused.
    private func checkDeclaredGroup(_ m: [String: Reader], _ spec: DeclaredAppSpec) throws(ScenarioError) {
        let why = "\(spec.file) declares a group app's broadcast and presence; the group shape's other rooms are not declarable yet (docs/apps.md, \"A group app\")"
        if let retention = m["retention"] {
            throw retention.error("`retention` does nothing for app \(spec.name): its phones store nothing on the backend to purge (their positions are broadcast)")
        }
        if let social = try m["social"]?.mapping(Self.socialKeys) {
            let refused = ["abandon", "abandon_at", "auto_end", "auto_end_grace", "join_by_request", "approve_after", "leave_rejoin", "leave_at",
                           "rejoin_after", "replay_every", "dm_every"]
            if let key = refused.first(where: { social[$0] != nil }) { throw social[key]!.error("`\(key)` does nothing for app \(spec.name): \(why)") }
        }
        for g in try m["groups"]?.sequence() ?? [] {
            if let every = try g.mapping(Self.groupKeys)["message_every"] {
                throw every.error("`message_every` does nothing for app \(spec.name): it has no chat; \(why)")
            }
        }
    }

    /// `file: apps/mine.yaml`: a declared app, the path relative to the scenario's folder.
    private func appFile() throws(ScenarioError) -> DeclaredAppSpec {
        let given = try string()
        let path = given.hasPrefix("/") ? given : URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent(given).path
        guard FileManager.default.fileExists(atPath: path) else { throw error("no app file \(path)") }
        return try AppFile.load(path)
    }

    private func appName() throws(ScenarioError) -> String {
        let s = try string()
        guard Apps.names.contains(s) else {
            var message = "no app \"\(s)\" (apps: \(Apps.names.joined(separator: ", ")))"
            if let guess = Spelling.closest(s, among: Apps.names) { message += "; did you mean \"\(guess)\"?" }
            throw error(message)
        }
        return s
    }
}
