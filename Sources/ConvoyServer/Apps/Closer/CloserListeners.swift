import ConvoyJSON
import ConvoyTime
import Foundation
import Hummingbird
import HummingbirdWebSocket
import NIOCore
import Synchronization

/// Firestore's `Listen` (google/firestore/v1/firestore.proto) as Closer's phones hold it: one connection a phone,
/// every listener of the app multiplexed on it as targets, the server pushing each change of a listened document
/// down it. Convoy carries the proto's JSON messages over a websocket (the SDKs speak gRPC or WebChannel):
///
/// - the client sends `{"addTarget": {"targetId": n, "documents": {"documents": [name]}}}` and `{"removeTarget": n}`;
/// - the server answers a new target with `targetChange` `ADD`, a `documentChange` with the document if it exists
///   (nothing if it does not), then `CURRENT`; from then on a `documentChange` for each change and a
///   `documentDelete` when it goes; a document the caller may not read is `REMOVE` with the rules' `cause`
///   (`PERMISSION_DENIED`, code 7), as a denied listener is.
///
/// A change is found by reading the listened documents again under the rules, as their caller, after each write
/// under the same root (`users/{uid}` or `couples/{id}`), and comparing with what was last pushed: a write that
/// changes nothing a listener sees sends nothing. Reads, comparisons and sends are made under one lock, so a
/// connection's frames leave in the order of the writes.
final class CloserListeners: Sendable {
    struct Target: Sendable {
        var id: Int
        var path: [String]
        /// What was last pushed: the document's fields' JSON, "" for none, nil before the first read.
        var last: String?
    }

    struct Connection: Sendable {
        let outlet: RealtimeOutlet
        let uid: String
        var targets: [Int: Target] = [:]
    }

    struct State: Sendable {
        var connections: [Int: Connection] = [:]
        var next = 0
        /// Each root's listeners: root → (connection, target id).
        var byRoot: [String: Set<Key>] = [:]
    }

    struct Key: Hashable, Sendable {
        var connection: Int
        var target: Int
    }

    private let state = Mutex(State())

    /// Targets a connection may hold (a phone listens to a handful).
    static let maxTargets = 64

    /// Connections open now (what `convoy serve` holds for its listeners).
    var count: Int { state.withLock { $0.connections.count } }

    /// The root a document's path lies under: `users/{uid}` or `couples/{id}`.
    static func root(_ path: [String]) -> String { path.prefix(2).joined(separator: "/") }

    func connect(_ outlet: RealtimeOutlet, uid: String) -> Int {
        state.withLock { s in
            s.next += 1
            s.connections[s.next] = Connection(outlet: outlet, uid: uid)
            return s.next
        }
    }

    func disconnect(_ id: Int) {
        state.withLock { s in
            guard let c = s.connections.removeValue(forKey: id) else { return }
            for t in c.targets.values { s.byRoot[Self.root(t.path)]?.remove(Key(connection: id, target: t.id)) }
            c.outlet.finish()
        }
    }

    /// One message from connection `id`; `read` reads a document as the connection's caller (nil: there is none;
    /// throws `CloserError`: the rules refuse it).
    func handle(_ text: String, connection id: Int, project: String,
                read: (_ path: [String], _ uid: String) throws -> [String: FirestoreValue]?) {
        guard let o = JSONScanner.parse(Array(text.utf8)) else { return reject(id, "not JSON") }
        if let add = o["addTarget"] {
            guard let targetID = add["targetId"]?.int, let names = add["documents"]?["documents"]?.items, names.count == 1,
                  let name = names[0].string else {
                return reject(id, "addTarget needs a targetId and one document name")
            }
            let prefix = "projects/\(project)/databases/(default)/documents/"
            let path = name.hasPrefix(prefix) ? name.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false).map(String.init) : []
            state.withLock { s in
                guard var c = s.connections[id] else { return }
                guard !path.isEmpty, path.count % 2 == 0, !path.contains(""), c.targets[targetID] == nil, c.targets.count < Self.maxTargets else {
                    c.outlet.send(Self.targetChange("REMOVE", targetID, cause: (3, "Bad target: a document name under \(prefix), an unused id, at most \(Self.maxTargets).")))
                    return
                }
                c.outlet.send(Self.targetChange("ADD", targetID))
                c.targets[targetID] = Target(id: targetID, path: path)
                s.connections[id] = c
                s.byRoot[Self.root(path), default: []].insert(Key(connection: id, target: targetID))
                Self.refresh(&s, Key(connection: id, target: targetID), project: project, read: read)
                // Current, unless the rules removed it just now.
                if s.connections[id]?.targets[targetID] != nil { s.connections[id]?.outlet.send(Self.targetChange("CURRENT", targetID)) }
            }
        } else if let targetID = o["removeTarget"]?.int {
            state.withLock { s in
                guard let t = s.connections[id]?.targets.removeValue(forKey: targetID) else { return }
                s.byRoot[Self.root(t.path)]?.remove(Key(connection: id, target: targetID))
                s.connections[id]?.outlet.send(Self.targetChange("REMOVE", targetID))
            }
        } else {
            reject(id, "neither addTarget nor removeTarget")
        }
    }

    /// Documents under `roots` were written: every listener of theirs is read again and told what changed.
    func changed(_ roots: Set<String>, project: String, read: (_ path: [String], _ uid: String) throws -> [String: FirestoreValue]?) {
        state.withLock { s in
            for root in roots {
                for key in s.byRoot[root] ?? [] { Self.refresh(&s, key, project: project, read: read) }
            }
        }
    }

    /// Reads one target again as its caller and pushes what changed.
    private static func refresh(_ s: inout State, _ key: Key, project: String,
                                read: (_ path: [String], _ uid: String) throws -> [String: FirestoreValue]?) {
        guard let c = s.connections[key.connection], let t = c.targets[key.target] else { return }
        let name = "projects/\(project)/databases/(default)/documents/" + t.path.joined(separator: "/")
        let fields: [String: FirestoreValue]?
        do { fields = try read(t.path, c.uid) } catch let e as CloserError where e.code == "NOT_FOUND" {
            fields = nil
        } catch {
            // The rules no longer let the caller read it: the target is removed, as a denied listener is.
            c.outlet.send(targetChange("REMOVE", t.id, cause: (7, "Missing or insufficient permissions.")))
            s.connections[key.connection]?.targets[key.target] = nil
            s.byRoot[root(t.path)]?.remove(key)
            return
        }
        let text = fields.map { JSONValue($0.mapValues(\.value)).text } ?? ""
        guard text != t.last else { return }
        s.connections[key.connection]?.targets[key.target]?.last = text
        if fields != nil {
            let stamp = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
            c.outlet.send("{\"documentChange\":{\"document\":{\"name\":\(JSONValue.string(name).text),\"fields\":\(text),\"updateTime\":\"\(stamp)\"},\"targetIds\":[\(t.id)]}}")
        } else if t.last != nil {
            c.outlet.send("{\"documentDelete\":{\"document\":\(JSONValue.string(name).text),\"removedTargetIds\":[\(t.id)]}}")
        }
    }

    static func targetChange(_ type: String, _ id: Int, cause: (code: Int, message: String)? = nil) -> String {
        let why = cause.map { ",\"cause\":{\"code\":\($0.code),\"message\":\(JSONValue.string($0.message).text)}" } ?? ""
        return "{\"targetChange\":{\"targetChangeType\":\"\(type)\",\"targetIds\":[\(id)]\(why)}}"
    }

    /// A message the protocol has no place for: the connection is told why and closed.
    private func reject(_ id: Int, _ why: String) {
        let outlet = state.withLock { $0.connections[id]?.outlet }
        outlet?.send(JSONValue(["error": ["code": 3, "message": .string("Invalid Listen request: \(why).")]]).text)
        outlet?.closeIdle()
    }
}

extension CloserRoutes {
    /// `GET /google.firestore.v1.Firestore/Listen`, upgraded to a websocket, with `Authorization: Bearer <ID token>`.
    func addListen(to router: Router<RealtimeRequestContext>) {
        router.ws("google.firestore.v1.Firestore/Listen") { request, _ in
            (try? await caller(request)) == nil ? .dontUpgrade : .upgrade([:])
        } onUpgrade: { inbound, _, context in
            guard let uid = try? await caller(context.request) else { return }
            let outlet = RealtimeOutlet(channel: context.requestContext.channel, heardAt: clock.now())
            let id = listeners.connect(outlet, uid: uid)
            defer { listeners.disconnect(id) }
            for try await message in inbound.messages(maxSize: 1 << 16) {
                guard case .text(let text) = message else { continue }
                listeners.handle(text, connection: id, project: tokens.project, read: readAs)
            }
        }
    }

    /// A document as `uid` reads it under the rules (what a GET answers).
    func readAs(_ path: [String], _ uid: String) throws -> [String: FirestoreValue]? {
        let now = clock.date
        return try store.with { s in try access(&s, path: path, method: .get, fields: nil, query: DocumentQuery(), uid: uid, now: now) }
    }

    /// Documents under `roots` were written: their listeners hear of it.
    func wrote(_ roots: Set<String>) {
        listeners.changed(roots, project: tokens.project, read: readAs)
    }
}
