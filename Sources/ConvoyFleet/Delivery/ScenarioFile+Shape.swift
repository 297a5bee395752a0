import ConvoyMetrics

/// What a scenario may say depends on its app's shape: a group app's teams are its social graph, a
/// pairwise app has no teams and no messages, a mailbox app's purge is its own.
extension Reader {
    /// Refuses the keys the app's shape has no use for, and asks for those it needs.
    func checkShapeKeys(_ m: [String: Reader], social: [String: Reader]?, app choice: AppChoice, couples: Bool) throws(ScenarioError) {
        guard let shape = choice.profile?.shape else { return }
        let (group, mailbox) = (shape == .group, shape == .mailbox)
        if group {
            // A group app shares with its team at once: the teams are the social graph.
            guard social?["groups"] != nil else {
                throw (m["social"] ?? self).error("\(choice.name) shares with a team at once: give social.groups, a team size such as 4..8")
            }
            if let r = m["migration"] {
                throw r.error("migration is not modelled for \(choice.name) yet (its phones have no keys or pairwise friends)")
            }
        } else if let groups = social?["groups"] {
            throw groups.error("groups are teams for apps that share with a team at once (app: survale); \(choice.name) shares with each friend")
        } else if !mailbox {
            for g in try m["groups"]?.sequence() ?? [] {
                if let every = try g.mapping(Self.groupKeys)["message_every"] {
                    throw every.error("message_every posts to a team (app: survale) or to friends (app: quickpic); \(choice.name) has no messages")
                }
            }
        }
        let sendsMedia: Bool
        if case .group(let app)? = choice.profile?.shaped { sendsMedia = app.sendsMedia } else { sendsMedia = false }
        for g in try m["groups"]?.sequence() ?? [] {
            let keys = try g.mapping(Self.groupKeys)
            if !sendsMedia {
                // A mailbox app sends photos to friends, not videos.
                let refused = mailbox ? ["video_every", "video_size"] : Self.mediaKeys
                if let key = refused.first(where: { keys[$0] != nil }), let r = keys[key] {
                    throw r.error(mailbox ? "\(key): \(choice.name) sends texts and photos, no videos"
                                  : "\(key) sends media to a team's chat (app: survale) or photos to friends (app: quickpic); \(choice.name) has no media")
                }
            }
            if !mailbox, let key = ["poll_every", "relogin_every"].first(where: { keys[$0] != nil }), let r = keys[key] {
                throw r.error("\(key) is for apps whose phones poll a mailbox (app: quickpic); \(choice.name) pushes on Realtime")
            }
        }
        try refuseKeysThatDoNothing(m, app: choice.name, profile: choice.profile, group: group)
        try refuseSocialKeysThatDoNothing(social, app: choice.name, profile: choice.profile, group: group)
        if mailbox {
            for key in ["migration", "hostile"] where m[key] != nil && !(key == "hostile" && couples) {
                throw m[key]!.error("\(key) is not modelled for \(choice.name) yet (its keys are published once, at registration; its probes run with convoy probe)")
            }
        }
    }

    /// `social:` keys the app's shape never reads are errors naming their line: a group app's graph is its teams (no
    /// friend counts, communities or pending requests, and no invite codes to expire); only a group app's groups are
    /// abandoned and ended by the backend; only an app whose backend issues invite codes expires them; couples have no
    /// communities to draw friends from and, with no "no" in the app, nothing to decline.
    private func refuseSocialKeysThatDoNothing(_ social: [String: Reader]?, app name: String, profile: (any AppProfile)?,
                                               group: Bool) throws(ScenarioError) {
        guard let social else { return }
        if group {
            for key in ["friends", "communities", "decide_later", "invite_ttl"] where social[key] != nil {
                throw social[key]!.error("`\(key)` does nothing for app \(name): its phones share with their team (social.groups), "
                                         + "formed in set-up, with no friend requests or invite codes")
            }
        } else {
            for key in ["auto_end", "auto_end_grace", "abandon_at"] where social[key] != nil {
                throw social[key]!.error("`\(key)` does nothing for app \(name): it times a group app's abandoned groups (app: survale, social.abandon); "
                                         + "\(name) has no groups")
            }
            if let ttl = social["invite_ttl"], profile?.issuesInviteCodes == false {
                throw ttl.error("`invite_ttl` does nothing for app \(name): it is how long an invite code lives (app: closer, greenbox); "
                                + "\(name)'s friends ask by id or username, and its requests do not expire")
            }
            if profile?.friendsAreCouples == true {
                if let c = social["communities"] {
                    throw c.error("`communities` does nothing for app \(name): each phone has one partner (friends: 1), whichever community it is drawn from")
                }
                if let d = social["decline"] {
                    throw d.error("`decline` does nothing for app \(name): it has no \"no\"; a code nobody types in is social.decide_later "
                                  + "(and expires after invite_ttl)")
                }
            }
        }
    }

    /// Keys an app would read and ignore are errors naming their line: a location key for an app that shares none,
    /// a per-friend key for an app that broadcasts to a team, `retry:` (location inserts) for an app without
    /// them, `retention:` for an app that leaves nothing on the backend to purge, and a location threshold.
    private func refuseKeysThatDoNothing(_ m: [String: Reader], app name: String, profile: (any AppProfile)?,
                                         group: Bool) throws(ScenarioError) {
        let sharesLocation = profile?.sharesLocation ?? true
        let pairwise = sharesLocation && !group
        for g in try m["groups"]?.sequence() ?? [] {
            let keys = try g.mapping(Self.groupKeys)
            if !sharesLocation, let key = Self.locationKeys.first(where: { keys[$0] != nil }) {
                throw keys[key]!.error("`\(key)` does nothing for app \(name): its phones do not share locations")
            }
            if group, let key = Self.pairwiseKeys.first(where: { keys[$0] != nil }) {
                throw keys[key]!.error("`\(key)` does nothing for app \(name): it broadcasts to its team on a private channel, "
                                       + "with no friend's key to read and no per-friend preference or fuzzing")
            }
        }
        if !pairwise, let r = m["retry"] {
            throw r.error("`retry` does nothing for app \(name): it retries a phone's failed location inserts, and \(name) "
                          + (sharesLocation ? "broadcasts its positions (its chat has a retry queue of its own)" : "shares no locations"))
        }
        if profile?.friendsAreCouples == true, let r = m["retention"] {
            throw r.error("`retention` does nothing for app \(name): its phones leave no locations or messages on the backend "
                          + "(its pairing codes' expiry is probed by probes/\(name).yaml)")
        }
        if !sharesLocation {
            for r in try m["thresholds"]?.sequence() ?? [] {
                if let t = try? Threshold(try r.string()), t.measuresLocations {
                    throw r.error("`\(t.text)` measures location updates, which app \(name)'s phones do not send")
                }
            }
        }
    }
}

extension Scenario {
    /// Whether its retention counts from each group's end (a group app: Survale's operations are purged
    /// after they end), not row by row.
    public var retentionCountsFromGroupEnd: Bool { app.profile?.shape == .group }

    /// The retention a scenario gets from its app's shape when it gives none (`given`: the keys it gave):
    /// a group app keeps its data for a time after each group ends (Survale: 7 days), checked only when the
    /// scenario gives that time; a mailbox app's fallback purge (QuickPic: undelivered messages after 7
    /// days, by a job every hour) unless the scenario compresses it, checked only when phones that never
    /// poll (`poll_every: never`) keep messages waiting.
    mutating func applyShapeRetention(given: [String: Reader]?) {
        // A declared app's window, unless the scenario gives its own.
        if let window = app.declared?.retention.window, given?["window"] == nil { retention.window = window }
        switch app.profile?.shape {
        case .group?:
            if given == nil { retention.checkEvery = 0 }
        case .mailbox?:
            let given = given ?? [:]
            if given["window"] == nil { retention.window = 7 * 86_400 }
            if given["purge_every"] == nil { retention.purgeEvery = 3_600 }
            if given["check_every"] == nil, !groups.contains(where: \.pollsNever) { retention.checkEvery = 0 }
        case .pairwise?, nil:
            // An app of actions alone leaves no location rows to check.
            if app.declared?.sharesLocations == false { retention.checkEvery = 0 }
        }
    }
}
