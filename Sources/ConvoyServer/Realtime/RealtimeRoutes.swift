import ConvoyWire
import Hummingbird
import HummingbirdWebSocket
import NIOWebSocket

/// `/realtime/v1/websocket?apikey=…&vsn=1.0.0`: Supabase Realtime over Phoenix v1 JSON.
struct RealtimeRoutes: Sendable {
    let hub: RealtimeHub
    let tokens: TokenService
    let authorizer: any ChannelAuthorizer
    let clock: any ConvoyClock
    /// Largest message accepted from a client.
    static let maxMessage = 1 << 20

    func add(to router: Router<BasicWebSocketRequestContext>) {
        router.ws("realtime/v1/websocket") { request, _ in
            guard let key = request.uri.queryParameters["apikey"].map(String.init),
                  let claims = try? await tokens.verify(key), claims.role == "anon" || claims.role == "service_role"
            else { return .dontUpgrade }
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            let apikey = context.request.uri.queryParameters["apikey"].map(String.init) ?? ""
            let (stream, sink) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingOldest(RealtimeHub.maxQueued))
            let id = hub.connect(sink)
            let session = RealtimeSession(id: id, hub: hub, tokens: tokens, authorizer: authorizer, clock: clock,
                                          apikey: apikey)
            defer { hub.disconnect(id) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await text in stream { try await outbound.write(.text(text)) }
                    // The hub finished the stream: the client stopped reading (unless the
                    // session is over anyway, and its own close code is the one to send).
                    guard !Task.isCancelled else { return }
                    try? await outbound.close(.policyViolation, reason: "too many unread messages")
                }
                // However the inbound ends (a close, or a frame that breaks the rules: the
                // WebSocket closes with its code once this returns), the writer stops too.
                defer {
                    group.cancelAll()
                    sink.finish()
                }
                for try await message in inbound.messages(maxSize: Self.maxMessage) {
                    if case .text(let text) = message { await session.handle(text) }
                }
            }
        }
    }
}
