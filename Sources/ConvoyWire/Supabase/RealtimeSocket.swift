import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import Synchronization

/// One websocket to a Realtime server, as NIO channel handlers and nothing
/// else: the upgrade (through the phone's CONNECT tunnel when its network is
/// shaped, with TLS for `wss`), then each text message handed to `onText` on
/// the event loop that read it, pings answered, a close answered and the
/// channel closed. It keeps no task of its own: a phone's connection is its
/// channel (swift-websocket's `WSClient` kept about a dozen tasks a
/// connection, each with its own task-local memory; docs/performance.md).
final class RealtimeSocket: Sendable {
    private let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    /// Completes when the connection has closed, for whatever reason.
    var closed: EventLoopFuture<Void> { channel.closeFuture }

    /// Sends one text message (from any thread; in the order of the calls from one thread).
    func send(_ text: String) {
        var buffer = channel.allocator.buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        let frame = WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: buffer)
        // Always through the loop's queue, even on the loop: frames go out in the order `send` was called
        // (a write made on the loop would otherwise overtake one queued from another thread just before).
        let channel = self.channel
        channel.eventLoop.execute { channel.writeAndFlush(frame, promise: nil) }
    }

    /// Sends a ping (empty); the peer's pong is read and dropped.
    func ping() {
        let channel = self.channel
        channel.eventLoop.execute {
            channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .ping, maskKey: .random(), data: channel.allocator.buffer(capacity: 0)), promise: nil)
        }
    }

    /// Says goodbye (a close frame, 1000) and closes; nothing happens twice. A peer that reads nothing more
    /// (the frame never leaves the send buffer) has the connection closed anyway after `closeGrace`.
    func close() {
        let channel = self.channel
        channel.eventLoop.execute {
            guard channel.isActive else { return }
            var data = channel.allocator.buffer(capacity: 2)
            data.write(webSocketErrorCode: .normalClosure)
            channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: data))
                .whenComplete { _ in channel.close(promise: nil) }
            let late = channel.eventLoop.scheduleTask(in: Self.closeGrace) { channel.close(promise: nil) }
            channel.closeFuture.whenComplete { _ in late.cancel() }
        }
    }

    static let closeGrace = TimeAmount.seconds(5)

    /// An HTTP base URL's websocket twin at `path` (`http` → `ws`, `https` → `wss`).
    static func webSocketURL(_ base: String, path: String) -> String {
        let trimmed = base.hasSuffix("/") ? String(base.dropLast()) : base
        return (trimmed.hasPrefix("https") ? "wss" + trimmed.dropFirst(5) : "ws" + trimmed.dropFirst(4)) + path
    }

    /// Opens `url` and waits for the upgrade, `timeout` seconds at most (then the attempt is given up and this throws).
    static func connect(url: String, proxy: TunnelProxy?, maxFrameSize: Int, headers: [(String, String)] = [], timeout: Double,
                        onText: @escaping @Sendable (String) -> Void) async throws -> RealtimeSocket {
        let attempt = open(url: url, proxy: proxy, maxFrameSize: maxFrameSize, headers: headers, onText: onText)
        let timer = Task {
            try? await Task.sleep(for: .seconds(timeout))
            if !Task.isCancelled { attempt.giveUp(Failure(description: "the connection did not open in \(Int(timeout)) s")) }
        }
        defer { timer.cancel() }
        return try await attempt.future.get()
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Opens `url` (`ws://` or `wss://`, path and query kept), through `proxy`'s tunnel when there is one.
    /// The attempt's future fails when the connection or the upgrade does; it may also never complete (a
    /// server that never answers): the caller gives it a deadline (`giveUp`).
    /// `onOpen` is called once the upgrade is done, on the channel's loop, before the first message reaches
    /// `onText` and before the attempt's future completes: whoever reports the opening reports it before any
    /// message (a server may send right after its 101, in the same read).
    static func open(url: String, proxy: TunnelProxy?, maxFrameSize: Int, headers extra: [(String, String)] = [],
                     onOpen: @escaping @Sendable () -> Void = {}, onText: @escaping @Sendable (String) -> Void) -> Attempt {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let attempt = Attempt(promise: loop.makePromise(of: RealtimeSocket.self))
        guard let target = Target.parsed(url) else {
            attempt.fail(Failure(description: "not a websocket URL: \(url)"))
            return attempt
        }
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(.seconds(30))
            .channelInitializer { channel in
                // One watch per connection: with several addresses (Happy Eyeballs) the initializer runs for each
                // try, and a losing try's close must not fail the attempt.
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(OpenWatch(attempt: attempt)) }
            }
        let (host, port) = proxy.map { ($0.host, $0.port) } ?? (target.host, target.port)
        // An address given as one (the usual 127.0.0.1) is connected to as it is: `connect(host:)` would resolve
        // it with getaddrinfo on a thread of its own, and race the answers, for every phone's connection.
        let connecting = if let address = try? SocketAddress(ipAddress: host, port: port) {
            bootstrap.connect(to: address)
        } else {
            bootstrap.connect(host: host, port: port)
        }
        connecting.whenComplete { result in
            switch result {
            case .failure(let error):
                attempt.fail(error)
            case .success(let channel):
                // Given up while connecting: the channel is closed, nothing more is set up on it.
                // On the channel's loop (the connect's future completes there): the watch is bound to it.
                guard attempt.opened(channel),
                      let handler = try? channel.pipeline.syncOperations.handler(type: OpenWatch.self) else { return }
                let watch = NIOLoopBound(handler, eventLoop: channel.eventLoop)
                let tunnel: EventLoopFuture<Void> =
                    if let proxy {
                        ConnectTunnel.open(channel, to: "\(target.host):\(target.port)", header: (TunnelProxy.header, String(proxy.phone)))
                    } else {
                        channel.eventLoop.makeSucceededVoidFuture()
                    }
                tunnel.flatMapThrowing {
                    try upgrade(channel, target: target, maxFrameSize: maxFrameSize, headers: extra, watch: watch, onOpen: onOpen, onText: onText, attempt: attempt)
                }.whenFailure { error in
                    attempt.fail(error)
                }
            }
        }
        return attempt
    }

    /// An attempt under way: its result (completed once, by the upgrade, a failure or `giveUp`), and a way to
    /// give it up (the channel, if any, is closed).
    final class Attempt: Sendable {
        private let promise: EventLoopPromise<RealtimeSocket>
        private let state = Mutex<(channel: (any Channel)?, done: Bool)>((nil, false))

        init(promise: EventLoopPromise<RealtimeSocket>) { self.promise = promise }

        var future: EventLoopFuture<RealtimeSocket> { promise.futureResult }

        /// The connection is made; false (and the channel closed) when the attempt has already ended.
        fileprivate func opened(_ channel: any Channel) -> Bool {
            let late = state.withLock { s in
                s.channel = channel
                return s.done
            }
            if late { channel.close(promise: nil) }
            return !late
        }

        /// Takes the attempt for the upgrade that just completed; false when it was given up or failed first
        /// (then the caller closes the channel and hands nothing on).
        fileprivate func claim() -> Bool {
            state.withLock { s in
                defer { s.done = true }
                return !s.done
            }
        }

        /// Completes a claimed attempt.
        fileprivate func succeed(_ socket: RealtimeSocket) { promise.succeed(socket) }

        fileprivate func fail(_ error: any Error) {
            let (first, channel) = state.withLock { s in
                defer { s.done = true }
                return (!s.done, s.channel)
            }
            guard first else { return }
            promise.fail(error)
            channel?.close(promise: nil)
        }

        /// Gives the attempt up with `error` (if it has not already ended); an open socket is not touched.
        func giveUp(_ error: any Error) { fail(error) }
    }

    // MARK: - The upgrade

    private static func upgrade(_ channel: any Channel, target: Target, maxFrameSize: Int, headers extra: [(String, String)] = [],
                                watch: NIOLoopBound<OpenWatch>, onOpen: @escaping @Sendable () -> Void, onText: @escaping @Sendable (String) -> Void, attempt: Attempt) throws {
        let pipeline = channel.pipeline.syncOperations
        let upgrader = NIOWebSocketClientUpgrader(maxFrameSize: maxFrameSize, automaticErrorHandling: true) { channel, _ in
            channel.eventLoop.makeCompletedFuture {
                // Given up (a deadline, a cancellation) between the 101 and now: the frames NIO holds back must
                // reach no one, so nothing is added and the channel is closed at once (on its loop).
                guard attempt.claim() else { return channel.close(promise: nil) }
                let sync = channel.pipeline.syncOperations
                try sync.addHandlers(frameHandlers(maxFrameSize: maxFrameSize, onText: onText))
                watch.value.upgraded = true
                sync.removeHandler(watch.value, promise: nil)
                // Frames that came in the 101's read are handed on only after this returns: the opening is
                // reported first.
                onOpen()
                attempt.succeed(RealtimeSocket(channel: channel))
            }
        }
        try pipeline.addHTTPClientHandlers(position: .before(watch.value), leftOverBytesStrategy: .forwardBytes,
                                           withClientUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
        if target.tls {
            let handler = try NIOSSLClientHandler(context: try tlsContext.get(), serverHostname: target.isIPAddress ? nil : target.host)
            try pipeline.addHandler(handler, position: .first)
        }
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: target.hostHeader)
        headers.add(name: "Content-Length", value: "0")
        for (name, value) in extra { headers.add(name: name, value: value) }
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: target.uri, headers: headers)
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
    }

    /// What reads an open websocket's frames behind NIO's decoder: fragments joined (at most 256, `maxFrameSize`
    /// bytes in all), text to `onText`, pings answered, a close answered. The fuzz target (ConvoyFuzz) runs these.
    static func frameHandlers(maxFrameSize: Int, onText: @escaping @Sendable (String) -> Void) -> [any ChannelHandler] {
        [NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 256, maxAccumulatedFrameSize: maxFrameSize),
         FrameReader(onText: onText)]
    }

    /// TLS for `wss`, with the system's roots and hostname verification (TLS left on, as libcurl's default is).
    private static let tlsContext = Result { try NIOSSLContext(configuration: .makeClientConfiguration()) }

    /// Where `url` points.
    struct Target {
        var host: String
        var port: Int
        var uri: String
        var tls: Bool

        init?(_ url: String) {
            guard let c = URLComponents(string: url), let scheme = c.scheme?.lowercased(), let host = c.host, !host.isEmpty else { return nil }
            switch scheme {
            case "ws", "http": tls = false
            case "wss", "https": tls = true
            default: return nil
            }
            self.host = host
            port = c.port ?? (tls ? 443 : 80)
            let path = c.percentEncodedPath.isEmpty ? "/" : c.percentEncodedPath
            uri = c.percentEncodedQuery.map { "\(path)?\($0)" } ?? path
        }

        /// `Target(url)`, the last URL's remembered: a fleet's phones all open the same one.
        static func parsed(_ url: String) -> Target? {
            if let last = lastParsed.withLock({ $0 }), last.url == url { return last.target }
            guard let target = Target(url) else { return nil }
            lastParsed.withLock { $0 = (url, target) }
            return target
        }
        private static let lastParsed = Mutex<(url: String, target: Target)?>(nil)

        var isIPAddress: Bool { host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." } }
        var hostHeader: String {
            let h = host.contains(":") ? "[\(host)]" : host
            return port == (tls ? 443 : 80) ? h : "\(h):\(port)"
        }
    }
}

/// Until the upgrade: fails the attempt when the connection closes, errs, or is answered with anything but
/// the upgrade (NIO's client upgrade handler does not fail on its own when the connection closes mid-upgrade).
private final class OpenWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    private let attempt: RealtimeSocket.Attempt
    /// Set on the channel's loop, before the handler is removed.
    var upgraded = false

    init(attempt: RealtimeSocket.Attempt) { self.attempt = attempt }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !upgraded else { return context.fireChannelRead(data) }
        if case .head(let head) = unwrapInboundIn(data) {
            fail(context, RealtimeSocket.Failure(description: "the server answered the websocket upgrade with HTTP \(head.status.code)"))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !upgraded { attempt.fail(RealtimeSocket.Failure(description: "the connection closed before the websocket opened")) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !upgraded else { return context.fireErrorCaught(error) }
        fail(context, error)
    }

    private func fail(_ context: ChannelHandlerContext, _ error: any Error) {
        attempt.fail(error)
        context.close(promise: nil)
    }
}

/// An open websocket's frames: text to `onText`, pings answered, a close answered and the channel closed.
private final class FrameReader: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame
    private let onText: @Sendable (String) -> Void
    private var closing = false

    init(onText: @escaping @Sendable (String) -> Void) { self.onText = onText }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            onText(String(buffer: frame.unmaskedData))
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            guard !closing else { return context.close(promise: nil) }
            closing = true
            // The close handshake: its code back, then the connection closed.
            var data = frame.unmaskedData
            let code = data.readWebSocketErrorCode() ?? .normalClosure
            var reply = context.channel.allocator.buffer(capacity: 2)
            reply.write(webSocketErrorCode: code)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: reply)))
                .whenComplete { _ in channel.close(promise: nil) }
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// A CONNECT tunnel through the phone's shaping proxy (`TunnelProxy`): the request, then the proxy's answer
/// read up to its blank line; a 2xx opens the tunnel, anything else fails it.
private final class ConnectTunnel: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    private let promise: EventLoopPromise<Void>
    private var answer: ByteBuffer?
    private var done = false

    private init(promise: EventLoopPromise<Void>) { self.promise = promise }

    static func open(_ channel: any Channel, to authority: String, header: (String, String)) -> EventLoopFuture<Void> {
        let promise = channel.eventLoop.makePromise(of: Void.self)
        let handler = ConnectTunnel(promise: promise)
        do {
            try channel.pipeline.syncOperations.addHandler(handler, position: .first)
        } catch {
            promise.fail(error)
            return promise.futureResult
        }
        var request = channel.allocator.buffer(capacity: 128)
        request.writeString("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\(header.0): \(header.1)\r\n\r\n")
        channel.writeAndFlush(request, promise: nil)
        return promise.futureResult
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        var bytes = unwrapInboundIn(data)
        if answer == nil { answer = bytes } else { answer!.writeBuffer(&bytes) }
        guard let text = answer.flatMap({ $0.getString(at: $0.readerIndex, length: $0.readableBytes) }),
              let end = text.range(of: "\r\n\r\n") else {
            if (answer?.readableBytes ?? 0) > 16_384 { fail(context, "the proxy's answer to CONNECT is too long") }
            return
        }
        let status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        guard (200..<300).contains(status) else { return fail(context, "the proxy refused the tunnel: HTTP \(status)") }
        guard text[end.upperBound...].isEmpty else { return fail(context, "the proxy spoke before the tunnel was used") }
        done = true
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        promise.succeed()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done {
            done = true
            promise.fail(RealtimeSocket.Failure(description: "the proxy closed the tunnel before it opened"))
        }
        context.fireChannelInactive()
    }

    /// Removed before the answer (the channel closed before the handler saw it open): the tunnel failed.
    func handlerRemoved(context: ChannelHandlerContext) {
        if !done {
            done = true
            promise.fail(RealtimeSocket.Failure(description: "the connection closed before the tunnel opened"))
        }
    }

    private func fail(_ context: ChannelHandlerContext, _ reason: String) {
        guard !done else { return }
        done = true
        promise.fail(RealtimeSocket.Failure(description: reason))
        context.close(promise: nil)
    }
}
