import Foundation

extension RunSummary {
    /// The histograms a reader looks at first, in this order; others follow by name.
    static let leading = [HistogramName.e2eLatency, .commitToReceipt, .post, .seal, .open, .encode, .decode, .schedulerLag, .subscribe, .signup].map(\.name)

    /// `summary.md`, and what `convoy run` prints at the end.
    public func markdown() -> String {
        var out = "# \(scenario): \(passed ? "passed" : "FAILED")\(complete ? "" : " (interrupted: incomplete)")\n\n"
        out += "\(devices) devices against \(target.url) (\(target.kind)), seed \(seed), \(Self.seconds(durationSeconds)) "
        out += "from the first arrival, started \(startedAt.formatted(Date.ISO8601FormatStyle())).\n\n"
        if let s = shard {
            if let i = s.shard {
                out += "Shard \(i)/\(s.shards) of run `\(s.runID)` (\(devices) of \(s.fleetDevices) devices). The accounting covers pairs whose both "
                out += "devices ran here; \(s.sentToOtherShards ?? 0) updates to friends on other shards are accounted for by `convoy merge`.\n\n"
            } else {
                out += "Merged from \(s.shards) shards of run `\(s.runID)`\(s.folders.map { ": " + $0.joined(separator: ", ") } ?? "").\n\n"
            }
        }

        let a = accounting
        if showsLocations { out += accountingSection(a) }
        return out + sections()
    }

    /// The location updates' accounting (apps whose phones share locations).
    func accountingSection(_ a: Accounting) -> String {
        var out = "## Accounting\n\n"
        out += "| sent | delivered | lost | duplicates | to friends offline |\n|---:|---:|---:|---:|---:|\n"
        out += "| \(a.sent) | \(a.delivered) | \(a.lostTotal) | \(a.duplicates) | \(a.sentOffline) |\n\n"
        if a.deliveredByBackfill > 0 { out += "Of the delivered, \(a.deliveredByBackfill) came late through a backfill after a reconnect.\n\n" }
        if a.deliveredAfterRetry > 0 { out += "Of the delivered, \(a.deliveredAfterRetry) were posted by a retry after their first insert failed.\n\n" }
        if !a.lost.isEmpty {
            out += "Lost by reason: " + a.lost.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ".\n\n"
        }
        out += a.sent == 0 ? "No update was sent: the accounting is not tested in this run.\n\n"
            : a.closes ? "Every update is accounted for: sent = delivered + lost.\n\n"
            : "**The accounting does not close**: sent \(a.sent) ≠ delivered \(a.delivered) + lost \(a.lostTotal).\n\n"
        return out
    }

    /// Everything after the accounting.
    func sections() -> String {
        var out = ""

        if let network, !network.isEmpty {
            out += "## Network conditions\n\n| group | conditions | tunnels | cut | offline | off Realtime |\n|---|---|---:|---:|---:|---:|\n"
            for g in network {
                let offline = g.offlineShare.map { String(format: "%.1f %%", $0 * 100) } ?? "–"
                let off = g.offRealtimeShare.map { String(format: "%.1f %%", $0 * 100) } ?? "–"
                out += "| \(g.group) | \(g.summary) | \(g.tunnels) | \(g.cuts) | \(offline) | \(off) |\n"
            }
            out += "\nEvery byte of these groups' phones went through their links (docs/network.md); \"cut\": times a phone's open "
            out += "connections were closed by an offline window or a reset; \"offline\": the share of the phones' time, from arrival "
            out += "to the end, that their offline windows took in this run; \"off Realtime\": the share their Realtime connection was "
            out += "down, the windows and the reconnect after each (what a broadcast to them is lost to).\n\n"
            for note in network.compactMap(\.drawNote) { out += "**Not tested at this size:** \(note).\n\n" }
        }

        out += "## Latency (ms)\n\n| histogram | count | p50 | p90 | p99 | p99.9 | max |\n|---|---:|---:|---:|---:|---:|---:|\n"
        let names = Self.leading.filter { latencyMs[$0] != nil } + latencyMs.keys.filter { !Self.leading.contains($0) }.sorted()
        for name in names {
            let s = latencyMs[name]!
            out += "| \(name) | \(s.count) | \(Self.ms(s.p50)) | \(Self.ms(s.p90)) | \(Self.ms(s.p99)) | \(Self.ms(s.p999)) | \(Self.ms(s.max)) |\n"
        }

        if !thresholds.isEmpty {
            out += "\n## Thresholds\n\n| threshold | value | result |\n|---|---:|---|\n"
            for t in thresholds {
                out += "| `\(t.threshold)` | \(Self.value(t)) | \(t.passed ? "pass" : "**FAIL**") |\n"
            }
        }

        if let b = battery, !b.groups.isEmpty {
            out += "\n## Battery (modelled)\n\n| group | network | devices | radio mW | of it tail | GPS mW | CPU mW | mAh/h | %/h of \(String(format: "%.0f", b.capacityMah)) mAh | %/h per device p50 / p90 / max | reconnects |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            for g in b.groups {
                let mw = g.milliwatts
                let tail = g.radioJoules > 0 ? String(format: "%.0f %%", g.radioTailJoules / g.radioJoules * 100) : "–"
                out += "| \(g.name) | \(g.network) | \(g.devices) | " + String(format: "%.0f | %@ | %.0f | %.2f | %.1f | %.2f", mw.radio, tail, mw.gps, mw.cpu, g.mAhPerHour, g.percentPerHour)
                + " | " + (g.percentPerHourByDevice.map { String(format: "%.2f / %.2f / %.2f", $0.p50, $0.p90, $0.max) } ?? "–")
                + " | " + (g.reconnects.map(String.init) ?? "–") + " |\n"
            }
            out += "\nAverage power per device while online, from its own transfers, heartbeats, GPS time and crypto (docs/battery.md).\n"
        }

        if let r = retention {
            out += "\n## Retention\n\n"
            if r.afterGroupEnd {
                out += "Policy: everything of a group goes \(Self.seconds(r.windowSeconds)) after it ends, purged every \(Self.seconds(r.purgeEverySeconds)); "
                out += "anything of it readable \(Self.seconds(r.limitSeconds)) after its end (with \(Self.seconds(r.graceSeconds)) grace) is a violation.\n\n"
            } else {
                out += "Policy: rows live \(Self.seconds(r.windowSeconds)), purged every \(Self.seconds(r.purgeEverySeconds)); "
                out += "a readable row older than \(Self.seconds(r.limitSeconds)) (with \(Self.seconds(r.graceSeconds)) grace) is a violation.\n\n"
            }
            out += (r.holds ? "" : "**") + r.verdict.prefix(1).uppercased() + r.verdict.dropFirst() + (r.holds ? "" : "**") + ".\n"
            if !r.findings.isEmpty {
                out += r.afterGroupEnd ? "\n| finding | what | ended_at | since the end | past the window | found by |\n|---|---|---|---:|---:|---|\n"
                    : "\n| finding | row | created_at | age | past the window | found by |\n|---|---:|---|---:|---:|---|\n"
                for f in r.findings.prefix(10) {
                    out += "| \(f.kind) | \(f.item ?? String(f.rowID)) | \(f.createdAt) | \(Self.seconds(f.ageSeconds)) | \(Self.seconds(f.overageSeconds)) | \(f.foundBy) |\n"
                }
            }
        }

        if let g = groups {
            out += "\n## Groups\n\n\(g.groups) groups; \(g.endedByOwner) ended by their owner at the end"
            if g.notEnded > 0 { out += ", \(g.notEnded) still running when the run looked" }
            if g.abandoned > 0 {
                let after = g.autoEndAfterSeconds.map { Self.seconds($0) }.joined(separator: ", ")
                out += "; \(g.abandoned) abandoned to auto-end after \(Self.seconds(g.autoEndSeconds)) (grace \(Self.seconds(g.graceSeconds))): "
                out += "\(g.autoEnded) ended in time" + (after.isEmpty ? "" : " (\(after) after the last member left)")
            }
            out += ".\n\n" + (g.holds ? "" : "**") + g.verdict.prefix(1).uppercased() + g.verdict.dropFirst() + (g.holds ? "" : "**") + ".\n"
            if let m = g.messages { out += "\n" + chatLine(m) + "\n" }
            if let m = g.media { out += "\n" + mediaLine(m) + "\n" }
            if let d = g.direct {
                out += "\n" + d.directLine
                if let off = counters["direct_to_offline"], off > 0 { out += "; \(off) more not sent, to a partner off line" }
                if let shut = counters["direct_not_open"], shut > 0 { out += "; \(shut) not sent, the pair's channel not open yet" }
                if let failed = counters["direct_failures"], failed > 0 { out += "; \(failed) could not be sent" }
                if let l = latencyMs["direct_latency"] { out += "; latency p50 \(Self.ms(l.p50)) ms, p99 \(Self.ms(l.p99)) ms" }
                out += ".\n"
            }
            if let r = g.replay {
                let v = r.verdict
                out += "\n" + (r.holds ? "" : "**") + v.prefix(1).uppercased() + v.dropFirst() + (r.holds ? "" : "**")
                if let l = latencyMs["replay_load"] { out += "; \(l.count) replays loaded in all, p50 \(Self.ms(l.p50)) ms, p99 \(Self.ms(l.p99)) ms" }
                out += ".\n"
            }
            if !g.findings.isEmpty {
                out += "\n| group | finding | detail |\n|---:|---|---|\n"
                for f in g.findings.prefix(10) { out += "| \(f.group) | \(f.kind) | \(f.detail) |\n" }
            }
        }

        if let m = mailbox { out += mailboxSection(m) }
        out += friendsSection() + sessionsSection()
        if let f = failures, !f.isEmpty { out += failuresSection(f) }

        if let p = probes {
            out += "\n## Hostile-device probes\n\n"
            out += "\(p.hostileDevices) hostile device\(p.hostileDevices == 1 ? "" : "s") ran \(p.catalogue): \(p.tried) tries, "
            out += p.leaks > 0 ? "**\(p.leaks) leaked**" : "none leaked"
            out += ", \(p.findings) findings.\n\n| category | probes | tried | denied | leaked | findings |\n|---|---:|---:|---:|---:|---:|\n"
            var order: [String] = []
            for x in p.probes where !order.contains(x.category) { order.append(x.category) }
            for c in order {
                let xs = p.probes.filter { $0.category == c }
                func sum(_ k: KeyPath<ProbeSummary.Probe, Int>) -> Int { xs.reduce(0) { $0 + $1[keyPath: k] } }
                out += "| \(c) | \(xs.count) | \(sum(\.tried)) | \(sum(\.denied)) | \(sum(\.leaked)) | \(sum(\.findings)) |\n"
            }
            for x in p.probes where x.leaked > 0 || x.findings > 0 {
                guard let e = x.evidence.first else { continue }
                out += "\n- \(x.leaked > 0 ? "**LEAK**" : "finding") `\(x.id)`: \(e.note) (`\(e.request.prefix { $0 != "\n" })` → \(e.status))"
            }
            if p.probes.contains(where: { $0.leaked > 0 || $0.findings > 0 }) { out += "\n" }
            // What the probes measured: limits found, brute-force estimates, answers compared.
            for x in p.probes where !(x.measurements ?? []).isEmpty {
                out += "\n`\(x.id)`\(x.section.map { " (\($0))" } ?? ""):\n\n" + x.measurements!.map { "- \($0)\n" }.joined()
            }
        }

        if let r = resources {
            out += "\n## Harness\n\n"
            out += String(format: "CPU %.1f s from the first arrival to the end", r.end.cpuSeconds - r.timelineStart.cpuSeconds)
            if let per = r.cpuPerDeliveredMicroseconds { out += String(format: " (%.0f µs per delivered update)", per) }
            if let w = r.steady, let per = w.cpuPerDeliveredMicroseconds {
                out += String(format: "; steady part (%.0f s to %.0f s after the first arrival: %.0f s after the last arrival to %.0f s before the ramp-down) "
                              + "%.0f µs per update received", w.fromSeconds, w.toSeconds, RunSummary.Resources.steadySettle,
                              RunSummary.Resources.steadyMargin, per)
            }
            out += String(format: "; peak resident memory %.0f MiB", r.end.maxRSSMiB)
            if let per = r.memoryPerDeviceKiB { out += String(format: " (%.0f KiB per device above the %.0f MiB before any device)", per, r.beforeDevices.rssMiB) }
            out += target.kind == "embedded" ? ". The embedded backend runs in this process: its cost is included.\n" : ".\n"
        }

        let shown = counters.filter { $0.value != 0 }.sorted { $0.key < $1.key }
        if !shown.isEmpty {
            out += "\n## Counters\n\n" + shown.map { "- \($0.key): \($0.value)" }.joined(separator: "\n") + "\n"
        }
        return out
    }

    /// Chat lines in one line: the accounting, then live and after-a-gap latency.
    func chatLine(_ m: MediaReport) -> String {
        var out = "Chat: " + m.line(expecting: "receipts")
        for (name, what) in [("message_latency", "live"), ("message_catch_up_latency", "after a gap")] {
            if let h = latencyMs[name], h.count > 0 { out += "; \(what) p50 \(Self.ms(h.p50)) ms, p99 \(Self.ms(h.p99)) ms" }
        }
        return out + "."
    }

    /// Chat media in one line: the accounting, then upload and delivery latency.
    func mediaLine(_ m: MediaReport) -> String {
        var out = "Media: " + m.line
        for (name, what) in [("media_upload", "upload"), ("media_latency", "delivery"), ("media_catch_up_latency", "after a gap")] {
            if let h = latencyMs[name], h.count > 0 { out += "; \(what) p50 \(Self.ms(h.p50)) ms, p99 \(Self.ms(h.p99)) ms" }
        }
        return out + "."
    }

    static func ms(_ v: Double) -> String { v >= 100 ? String(format: "%.0f", v) : v >= 10 ? String(format: "%.1f", v) : String(format: "%.2f", v) }

    static func seconds(_ v: Double) -> String { v >= 120 ? String(format: "%.1f min", v / 60) : String(format: "%.1f s", v) }

    static func value(_ t: ThresholdResult) -> String {
        guard let v = t.value else { return "not tested in this run (why: \(t.untested ?? "nothing recorded for it"))" }
        switch t.unit {
        case "ms": return "\(ms(v)) ms"
        case "ratio": return String(format: "%.3f %%", v * 100)
        default: return String(format: "%.0f", v)
        }
    }
}

extension RunSummary {
    /// summary.md's "Mailbox": the messages' accounting, ACK-then-delete, and what polling cost.
    /// Each operation's failures by reason, with the first request and what the server answered.
    func failuresSection(_ failures: [FailureSample]) -> String {
        var out = "\n## Why requests failed\n\n| operation | reason | count | first request | answer |\n|---|---|---:|---|---|\n"
        for f in failures {
            let answer = f.answer.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
            out += "| \(f.operation) | \(f.reason) | \(f.count) | \(f.request.map { "`\($0)`" } ?? "-") | \(answer.prefix(200)) |\n"
        }
        return out
    }

    /// Friends made on the phones during the run (`pairing_*`), when any was tried: made, or failed.
    func friendsSection() -> String {
        let c = counters
        let requests = c["pairing_requests"] ?? 0
        guard requests + (c["pairing_failures"] ?? 0) > 0 else { return "" }
        var out = "\n## Friends made during the run\n\n\(requests) requests"
        if let looked = latencyMs["pairing_lookup"] { out += " (each after a lookup: \(looked.count))" }
        out += ": \(c["pairing_accepted"] ?? 0) accepted, \(c["pairing_decided_later"] ?? 0) left at decide later"
        if let d = c["pairing_declined"] { out += ", \(d) declined" }
        if let later = c["pairing_accepted_later"] { out += ", \(later) accepted later (\(c["pairing_accepted_later_succeeded"] ?? 0) went through)" }
        if let gone = c["pairing_requests_gone"] { out += ", \(gone) gone (expired)" }
        out += "; \(c["pairing_failures"] ?? 0) failed.\n"
        if let a = latencyMs["pairing_accept"] {
            out += "\nRequest to acceptance as the asking phone saw it: p50 \(Self.ms(a.p50)) ms, p99 \(Self.ms(a.p99)) ms"
            out += " (the friend's poll or listener, its think time and the asker's next look).\n"
        }
        return out
    }

    /// Sessions renewed during the run: refreshes (and by how many phones), log-outs and in again.
    func sessionsSection() -> String {
        let c = counters
        let (refreshes, relogins) = (c["token_refreshes"] ?? 0, c["relogins"] ?? 0)
        let failed = (c["token_refresh_failures"] ?? 0) + (c["relogin_failures"] ?? 0)
        guard refreshes + relogins + failed > 0 else { return "" }
        var out = "\n## Sessions\n\n\(refreshes) token refreshes by \(c["token_refresh_phones"] ?? 0) of \(devices) phones"
        out += ", \(c["token_refresh_failures"] ?? 0) failed"
        if relogins + (c["relogin_failures"] ?? 0) > 0 { out += "; \(relogins) log-outs and in again, \(c["relogin_failures"] ?? 0) failed" }
        if let again = c["sign_ins_again"] { out += "; \(again) signed in again after a refused refresh" }
        return out + ".\n"
    }

    func mailboxSection(_ m: MailboxReport) -> String {
        var out = "\n## Mailbox\n\n\(m.sent) messages sent, \(m.delivered) delivered"
        out += m.sent == 0 ? ", loss not tested (nothing sent)" : String(format: ", %d lost (%.2f %%, mailbox.loss)", m.lostByBackend, m.lossPercent)
        let other = m.lost.filter { $0.key != "not_fetched" }
        if !other.isEmpty { out += "; not delivered: " + other.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ") }
        if !m.acknowledgeDeletes { out += ", \(m.held) awaiting the partner's answer" }
        out += ". \(m.polls) polls (\(m.emptyPolls) empty, \(m.pollFailures) failed); "
        out += String(format: "%.1f MB up, %.1f MB down.", Double(m.bytesUp) / 1e6, Double(m.bytesDown) / 1e6)
        if let l = m.listeners {
            out += " Listeners: \(l.opened) held connections opened (\(l.failed) failed to open), \(l.pushes) pushes down them"
            out += String(format: " (%.2f MB), which each look reads instead of the wire; %d keepalive pings.", Double(l.bytesDown) / 1e6, l.keepalives)
        }
        out += "\n\n"
        out += (m.holds ? "" : "**") + m.verdict.prefix(1).uppercased() + m.verdict.dropFirst() + (m.holds ? "" : "**") + ".\n"
        if let n = m.notifications {
            out += "\nOutcome reminders (the backend's scan, delivered by FCM): "
            if let why = n.notTested {
                out += "not tested in this run (why: \(why))"
            } else {
                out += "\(n.due) owed to the phones, \(n.received) received, \(n.missedTotal) missed (outcome_reminders_missed)"
                if let l = latencyMs["outcome_reminder"] { out += String(format: "; mark reached → received p50 %.1f s, p99 %.1f s", l.p50 / 1e3, l.p99 / 1e3) }
            }
            let kinds = n.receivedByKind.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
            out += kinds.isEmpty ? ".\n" : ". Notifications received: " + kinds.joined(separator: ", ") + ".\n"
        }
        if let l = latencyMs["mailbox_latency"], let w = latencyMs["mailbox_poll_wait"], let t = latencyMs["mailbox_transfer"] {
            out += String(format: "\nLatency p50 %.0f ms = poll wait %.0f ms + transfer %.0f ms (p99: %.0f, %.0f, %.0f ms).\n",
                          l.p50, w.p50, t.p50, l.p99, w.p99, t.p99)
        }
        return out
    }
}
