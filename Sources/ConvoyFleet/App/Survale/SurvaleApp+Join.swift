import ConvoyJSON
import ConvoyWire
import Foundation

/// Joining an operation that has started (survale-spec.md: "asks to join and is approved"): a team member
/// inserts a join request (RLS: its own, to an active operation of its team); the case agent, who hears it
/// over `postgres_changes` on the operation's channel (or lists the pending ones on coming back), lets it
/// in with `decide_join_request`; the requester polls its request until it is decided, then joins the
/// operation's private channels (Realtime Authorization now lets it).
extension SurvaleApp {
    public func askToJoin(_ session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> String {
        guard let operation = operation(of: session.userID) else { throw SupabaseError(kind: .notJoined, message: "no operation for this user") }
        let rows = try await SupabaseREST(http).insertReturning("join_requests", objects: ["operation_id": .string(operation), "requester_id": .string(session.userID)],
                                                                token: session.accessToken)
        guard let id = rows.first?["id"]?.flatText else {
            throw SupabaseError(kind: .unexpectedResponse, message: "POST join_requests: no id in the response")
        }
        return id
    }

    public func joinDecision(_ id: String, session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> Bool? {
        let rows = try await SupabaseREST(http).select("join_requests", query: "select=status&id=eq.\(id)", token: session.accessToken)
        switch rows.first?["status"]?.string {
        case "approved": return true
        case "denied": return false
        case "pending": return nil
        default: throw SupabaseError(kind: .unexpectedResponse, message: "join request \(id): not found")
        }
    }

    public func approveJoin(_ id: String, owner session: Session, via http: SupabaseHTTP) async throws(SupabaseError) {
        guard let number = Int64(id) else { throw SupabaseError(kind: .unexpectedResponse, message: "join request id \"\(id)\" is not a number") }
        _ = try await SupabaseREST(http).rpc("decide_join_request", ["request_id": JSONValue(number), "approve": true], token: session.accessToken)
    }

    public func pendingJoinRequests(owner session: Session, via http: SupabaseHTTP) async throws(SupabaseError) -> [String] {
        guard let operation = operation(of: session.userID) else { return [] }
        let rows = try await SupabaseREST(http).select("join_requests", query: "select=id&operation_id=eq.\(operation)&status=eq.pending&order=id",
                                                       token: session.accessToken)
        return rows.compactMap { $0["id"]?.flatText }
    }
}
