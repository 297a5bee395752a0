import ConvoyJSON
import Foundation
import NIOCore
import Synchronization

/// A phone's Firestore listeners on one held connection, as the SDKs hold them (one watch stream an instance,
/// every listener a target on it: `RemoteStore`'s `watchStream` in firebase-js-sdk, -android-sdk and -ios-sdk):
/// `Listen`'s messages (google/firestore/v1/firestore.proto) as JSON over a websocket to
/// `/google.firestore.v1.Firestore/Listen`, with the ID token in `Authorization`.
///
/// The server pushes each listened document when the target is added and whenever it changes; what it pushed is kept
/// (`snapshot`), so a read of a listened document costs nothing on the wire. A target is one document. The
/// connection is not reopened here: once it has closed, `isOpen` is false and the phone opens another (the SDKs
/// back off 1 s × 1.5 per failure, at most 60 s, before they do).
public final class FirestoreListener: Sendable {
    /// What the phone knows of a document it listens to.
    public enum Snapshot: Sendable, Equatable {
        /// Not listened to, or the server has not said yet (`CURRENT` not come): read it over HTTP.
        case unknown
        case missing
        case present(fields: JSONValue)
    }

    private struct Target {
        var path: String
        var current = false
        var fields: JSONValue?
    }

    private struct State {
        var targets: [Int: Target] = [:]
        var byPath: [String: Int] = [:]
        var next = 0
        var open = true
        /// Bytes sent and received on the connection (frames' payloads plus each frame's 2–14 byte header).
        var bytesUp = 0
        var bytesDown = 0
    }

    private let socket: RealtimeSocket
    private let prefix: String
    private let state: Mutex<State>

    private init(socket: RealtimeSocket, prefix: String) {
        (self.socket, self.prefix) = (socket, prefix)
        state = Mutex(State())
    }

    /// Opens the connection. `pushed` is called on the connection's event loop with each message's size in bytes and
    /// whether it changed what `snapshot` answers (a document came, changed or went, or a target became current).
    public static func open(url: String, project: String, token: String, proxy: TunnelProxy? = nil, timeout: Double = 30,
                            pushed: @escaping @Sendable (_ bytes: Int, _ changed: Bool) -> Void) async throws(SupabaseError) -> FirestoreListener {
        // Messages before `open` returns (the first read with the 101) wait for the listener to exist; one lock keeps
        // them in order with those after.
        let box = Mutex<(listener: FirestoreListener?, pending: [String])>((nil, []))
        let socket: RealtimeSocket
        do {
            socket = try await RealtimeSocket.connect(url: RealtimeSocket.webSocketURL(url, path: "/google.firestore.v1.Firestore/Listen"), proxy: proxy,
                                                      maxFrameSize: 1 << 20, headers: [("Authorization", "Bearer \(token)")], timeout: timeout) { text in
                box.withLock { b in
                    if let listener = b.listener { pushed(text.utf8.count + 4, listener.receive(text)) } else { b.pending.append(text) }
                }
            }
        } catch {
            throw SupabaseError(kind: .wire(.transport), message: "Listen: \(error)")
        }
        let listener = FirestoreListener(socket: socket, prefix: "projects/\(project)/databases/(default)/documents/")
        box.withLock { b in
            b.listener = listener
            for text in b.pending { pushed(text.utf8.count + 4, listener.receive(text)) }
            b.pending = []
        }
        socket.closed.whenComplete { _ in listener.state.withLock { $0.open = false } }
        return listener
    }

    /// Whether the connection is still open.
    public var isOpen: Bool { state.withLock { $0.open } }

    /// Bytes the connection has carried each way so far.
    public var bytes: (up: Int, down: Int) { state.withLock { ($0.bytesUp, $0.bytesDown) } }

    /// Listens to exactly these documents (paths under `documents/`): new ones are added as targets, the others
    /// removed. Bytes sent.
    @discardableResult
    public func listen(to paths: Set<String>) -> Int {
        let frames: [String] = state.withLock { s in
            guard s.open else { return [] }
            var out: [String] = []
            for (path, id) in s.byPath where !paths.contains(path) {
                s.byPath[path] = nil
                s.targets[id] = nil
                out.append("{\"removeTarget\":\(id)}")
            }
            for path in paths.sorted() where s.byPath[path] == nil {
                s.next += 1
                s.byPath[path] = s.next
                s.targets[s.next] = Target(path: path)
                out.append("{\"addTarget\":{\"targetId\":\(s.next),\"documents\":{\"documents\":[\(JSONValue.string(prefix + path).text)]}}}")
            }
            s.bytesUp += out.reduce(0) { $0 + $1.utf8.count + 8 }
            return out
        }
        for frame in frames { socket.send(frame) }
        return frames.reduce(0) { $0 + $1.utf8.count + 8 }
    }

    /// Whether `path` is one of its targets (false once the server removed it: the rules refused it).
    public func isListening(_ path: String) -> Bool { state.withLock { $0.byPath[path] != nil } }

    /// What the listener knows of a document now.
    public func snapshot(_ path: String) -> Snapshot {
        state.withLock { s in
            guard s.open, let id = s.byPath[path], let t = s.targets[id], t.current else { return .unknown }
            return t.fields.map { .present(fields: $0) } ?? .missing
        }
    }

    /// A keepalive ping (the SDKs' gRPC channel sends one after 30 s without traffic: `keepAliveTime(30, SECONDS)` in
    /// firebase-android-sdk's `GrpcCallProvider`, `GRPC_ARG_KEEPALIVE_TIME_MS` 30 000 in firebase-ios-sdk).
    public func ping() {
        state.withLock { $0.bytesUp += 6 }
        socket.ping()
    }

    public func close() {
        state.withLock { $0.open = false }
        socket.close()
    }

    /// One message from the server; whether it changed what `snapshot` answers.
    func receive(_ text: String) -> Bool {
        let o = JSONScanner.parse(Array(text.utf8))
        return state.withLock { s in
            s.bytesDown += text.utf8.count + 4
            guard let o else { return false }
            if let change = o["targetChange"] {
                let ids = (change["targetIds"]?.items ?? []).compactMap(\.int)
                switch change["targetChangeType"]?.string {
                case "CURRENT":
                    var changed = false
                    for id in ids where s.targets[id]?.current == false {
                        s.targets[id]?.current = true
                        changed = true
                    }
                    return changed
                case "REMOVE":
                    // Refused (the rules) or removed: read over HTTP from now on, where the refusal shows.
                    for id in ids { if let t = s.targets.removeValue(forKey: id) { s.byPath[t.path] = nil } }
                    return !ids.isEmpty
                default: return false
                }
            }
            if let change = o["documentChange"], let name = change["document"]?["name"]?.string, name.hasPrefix(prefix) {
                let path = String(name.dropFirst(prefix.count))
                guard let id = s.byPath[path] else { return false }
                s.targets[id]?.fields = change["document"]?["fields"] ?? .object([])
                return s.targets[id]?.current == true
            }
            if let delete = o["documentDelete"], let name = delete["document"]?.string, name.hasPrefix(prefix) {
                guard let id = s.byPath[String(name.dropFirst(prefix.count))] else { return false }
                s.targets[id]?.fields = nil
                return s.targets[id]?.current == true
            }
            return false
        }
    }
}
