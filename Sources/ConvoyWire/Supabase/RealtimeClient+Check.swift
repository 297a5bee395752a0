import ConvoyFormats
import NIOCore

extension RealtimeClient {
    /// The topics of the events one server frame makes, read by a client that has joined `joined` (if any) and
    /// never connects: how the fuzz target (ConvoyFuzz) holds the client's own reading of a frame to
    /// `PhoenixFrame`'s. A heartbeat's reply counts as on Phoenix's topic; a connection event as on none.
    package static func topicsOfEvents(receiving text: String, joined: String?) async -> [String] {
        let client = RealtimeClient(url: "ws://127.0.0.1:9/realtime/v1/websocket", accessToken: "")
        if let joined { client.join(joined) }
        client.receive(text)
        client.sink.finish()
        var topics: [String] = []
        for await event in client.events {
            switch event {
            case .subscribed(let t), .joinFailed(let t, _), .channelClosed(let t, _), .change(let t, _),
                 .broadcast(let t, _), .presence(let t, _), .pushReply(let t, _, _, _):
                topics.append(t)
            case .heartbeat:
                topics.append(PhoenixFrame.heartbeatTopic)
            case .connected, .disconnected:
                break
            }
        }
        return topics
    }

    /// What reads the server's websocket frames behind NIO's frame decoder (`maxFrameSize`), as a connection has them.
    package static func frameHandlers(onText: @escaping @Sendable (String) -> Void) -> [any ChannelHandler] {
        RealtimeSocket.frameHandlers(maxFrameSize: maxFrameSize, onText: onText)
    }
}
