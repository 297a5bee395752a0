import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@testable import ConvoyServer

/// A Realtime connection's frames go straight to its channel, in order; a
/// client that stops reading is closed with 1008; nothing goes out after the session ends.
@Suite struct RealtimeOutletTests {
    /// A channel that is open, as a client's is.
    private func connected() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 4000)).wait()
        #expect(channel.isActive)
        return channel
    }

    private func text(_ frame: WebSocketFrame?) -> String? {
        guard let frame, frame.opcode == .text else { return nil }
        return String(buffer: frame.unmaskedData)
    }

    @Test func framesLeaveInTheOrderTheyWereSent() throws {
        let channel = try connected()
        let outlet = RealtimeOutlet(channel: channel, maxUnwritable: 4)
        #expect(outlet.send("one"))
        #expect(outlet.send("two"))
        // Nothing is written until the loop runs: every frame goes through its queue.
        #expect(try channel.readOutbound(as: WebSocketFrame.self) == nil)
        channel.embeddedEventLoop.run()
        #expect(text(try channel.readOutbound(as: WebSocketFrame.self)) == "one")
        #expect(text(try channel.readOutbound(as: WebSocketFrame.self)) == "two")
        #expect(try channel.readOutbound(as: WebSocketFrame.self) == nil)
    }

    @Test func aClientThatStopsReadingIsClosedWithPolicyViolation() throws {
        let channel = try connected()
        let outlet = RealtimeOutlet(channel: channel, maxUnwritable: 3)
        channel.isWritable = false
        for _ in 0..<3 { #expect(outlet.send("queued")) }
        #expect(!outlet.send("one too many"))
        channel.embeddedEventLoop.run()
        for _ in 0..<3 { #expect(text(try channel.readOutbound(as: WebSocketFrame.self)) == "queued") }
        let close = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        #expect(close.opcode == .connectionClose)
        var data = close.unmaskedData
        #expect(data.readWebSocketErrorCode() == .policyViolation)
        #expect(String(buffer: data) == "too many unread messages")
        #expect(!channel.isActive)
        #expect(!outlet.send("after the close"))
    }

    @Test func aChannelThatCatchesUpStartsCountingAgain() throws {
        let channel = try connected()
        let outlet = RealtimeOutlet(channel: channel, maxUnwritable: 2)
        channel.isWritable = false
        #expect(outlet.send("a") && outlet.send("b"))
        channel.isWritable = true
        #expect(outlet.send("c"))
        channel.isWritable = false
        #expect(outlet.send("d") && outlet.send("e"))
        channel.embeddedEventLoop.run()
        #expect(channel.isActive)
    }

    @Test func nothingGoesOutOnceTheSessionEnded() throws {
        let channel = try connected()
        let outlet = RealtimeOutlet(channel: channel)
        outlet.finish()
        #expect(!outlet.send("late"))
        channel.embeddedEventLoop.run()
        #expect(try channel.readOutbound(as: WebSocketFrame.self) == nil)
    }
}
