import ConvoyTime
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

    func add(to router: Router<RealtimeRequestContext>) {
        router.ws("realtime/v1/websocket") { request, _ in
            guard let key = request.uri.queryParameters["apikey"].map(String.init),
                  let claims = try? await tokens.verify(key), claims.role == "anon" || claims.role == "service_role"
            else { return .dontUpgrade }
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            let apikey = context.request.uri.queryParameters["apikey"].map(String.init) ?? ""
            let outlet = RealtimeOutlet(channel: context.requestContext.channel, heardAt: clock.now())
            let id = hub.connect(outlet)
            let session = RealtimeSession(id: id, hub: hub, tokens: tokens, authorizer: authorizer, clock: clock,
                                          apikey: apikey)
            // However the inbound ends (a close, or a frame that breaks the rules: the WebSocket
            // closes with its code once this returns), nothing more is sent after it.
            defer { hub.disconnect(id) }
            for try await message in inbound.messages(maxSize: Self.maxMessage) {
                outlet.heard(at: clock.now())
                if case .text(let text) = message { await session.handle(text) }
            }
        }
    }
}
