import ConvoyMetrics
import ConvoyWire
import Synchronization

/// The retention check of a group app (Survale, spec §2): everything of a group goes `window` after the
/// group ends, not row by row. At each check a sample of members (online or not: a member reads its
/// ended operation's chat, archive and media until the purge) asks what is left of its group; anything
/// readable more than `window + purge interval + grace` after the end is a violation, and a member's own
/// items (the messages it posted, the positions it archived) must all still be there until
/// `window − grace` after it. With a service key a slice of the groups is scanned too, which also sees
/// rows a member no longer can (a purge that removed the group's row but left its data).
extension RetentionChecker {
    /// Judges what `reader` (a member, or nil for the scan) found of `group`, using the end first read for it
    /// (the group's row goes with the purge). `contributed`: the member's own items, by kind. Returns how
    /// long ago the group ended when something of it is still readable.
    @discardableResult
    public func judge(group: String, remains: GroupRemains, contributed: [GroupItem: Int], now: Double, foundBy: String) -> Double? {
        let end: (at: Double, text: String)? = state.withLock { s in
            if s.groupEnds[group] == nil, let at = remains.endedAt {
                s.groupEnds[group] = (at, remains.endedText ?? CommitTimestamp.format(at), remains.byBackend)
            }
            return s.groupEnds[group].map { ($0.at, $0.text) }
        }
        guard let end else { return nil }
        state.withLock { $0.saw(createdAt: [end.at], now: now) }
        var items: [Int64: String] = [:]
        func id(_ kind: GroupItem) -> Int64 {
            let id = Self.itemID(group, kind)
            items[id] = "group \(group): \(kind.rawValue)"
            return id
        }
        let readable = remains.readable.filter { $0.value > 0 }.keys.sorted()
            .map { StoredUpdate(id: id($0), createdAt: end.at, createdText: end.text) }
        let oldest = judge(readable: readable, now: now, foundBy: foundBy, items: items)
        let mine = contributed.filter { $0.value > 0 }.keys.sorted()
        if !mine.isEmpty {
            // Where the app cannot tell a reader's own items, any readable item of the kind counts as them still there.
            let present = Set(mine.filter { k in (remains.own[k] ?? ((remains.readable[k] ?? 0) > 0 ? Int.max : 0)) >= contributed[k]! }.map(id))
            judgeEarly(received: mine.map { (id: id($0), createdAt: end.at) }, present: present, now: now, items: items, foundBy: foundBy)
        }
        return oldest
    }

    /// How the groups it saw ended, by group id: the groups report's source for those already purged.
    public var groupEndsSeen: [String: GroupEnd] {
        state.withLock { s in s.groupEnds.mapValues { GroupEnd(ended: true, byBackend: $0.byBackend, endedAt: $0.at) } }
    }

    /// A stable id for one kind of one group's data (FNV-1a), so that it is counted once however often it is found.
    static func itemID(_ group: String, _ kind: GroupItem) -> Int64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in "\(group)/\(kind.rawValue)".utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return Int64(bitPattern: h & 0x7fff_ffff_ffff_ffff)
    }

    /// One round for a group app: the next `sample` members each read what is left of their group, and, with a
    /// service key, the next `sample` groups are scanned.
    func groupRound(devices: [VirtualDevice], app: any GroupApp, http: SupabaseHTTP, serviceKey: String?, clock: RunClock, t: Double) async {
        let picked: [VirtualDevice] = state.withLock { s in
            guard !devices.isEmpty else { return [] }
            let n = min(policy.sample, devices.count)
            defer { s.cursor = (s.cursor + n) % devices.count }
            return (0..<n).map { devices[(s.cursor + $0) % devices.count] }
        }
        var oldest: Double?
        await withTaskGroup(of: Double?.self) { group in
            for device in picked {
                group.addTask {
                    guard let view = await device.groupRetentionView(), let id = app.groupID(of: view.userID) else { return nil }
                    return await self.check(id, reader: view.userID, token: view.token, contributed: view.contributed, app: app, http: http, clock: clock)
                }
            }
            for await age in group { if let age { oldest = max(oldest ?? age, age) } }
        }
        if policy.scan, let serviceKey {
            var ids: [String] = []
            for device in devices { if let id = app.groupID(of: await device.account.userID), !ids.contains(id) { ids.append(id) } }
            let slice: [String] = state.withLock { s in
                guard !ids.isEmpty else { return [] }
                let n = min(policy.sample, ids.count)
                defer { s.scanCursor = (s.scanCursor + n) % ids.count }
                return (0..<n).map { ids[(s.scanCursor + $0) % ids.count] }
            }
            for id in slice {
                if let age = await check(id, reader: nil, token: serviceKey, contributed: [:], app: app, http: http, clock: clock) {
                    oldest = max(oldest ?? age, age)
                }
            }
        }
        mark(t: t, oldestAge: oldest)
    }

    private func check(_ group: String, reader: String?, token: String, contributed: [GroupItem: Int], app: any GroupApp,
                       http: SupabaseHTTP, clock: RunClock) async -> Double? {
        do {
            let remains = try await app.groupRemains(group, reader: reader, token: token, via: http)
            metrics.count(.retentionHTTPRequests)
            return judge(group: group, remains: remains, contributed: contributed, now: clock.wallNow(), foundBy: reader == nil ? "scan" : "member")
        } catch {
            metrics.count(.retentionCheckErrors)
            return nil
        }
    }
}
