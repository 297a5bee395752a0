import NIOCore
import NIOHTTP1
import NIOPosix

/// One keep-alive connection of `LoopHTTP`: a channel with NIO's HTTP/1.1
/// client codecs and `Exchange`, which carries one request at a time.
final class LoopHTTPConnection: Sendable {
    let channel: any Channel
    let origin: LoopHTTP.Origin
    /// The channel's handler, reached only on the channel's loop (`NIOLoopBound` checks it at each access).
    let exchange: NIOLoopBound<LoopHTTPExchange>

    private init(channel: any Channel, origin: LoopHTTP.Origin, exchange: NIOLoopBound<LoopHTTPExchange>) {
        self.channel = channel
        self.origin = origin
        self.exchange = exchange
    }

    /// Opens a connection on `loop` (the caller's, when it runs on one: the
    /// response then comes back on the thread that waits for it).
    static func open(_ origin: LoopHTTP.Origin, on loop: any EventLoop, timeout: TimeAmount,
                     onIdleClose: @escaping @Sendable (LoopHTTPConnection) -> Void) async throws -> LoopHTTPConnection {
        let channel = try await ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let exchange = LoopHTTPExchange()
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(exchange.counter)
                    try sync.addHTTPClientHandlers()
                    try sync.addHandler(exchange)
                }
            }
            .connect(host: origin.host, port: origin.port).get()
        // On the loop, before any read can see it unset: a close that comes first finds no handler to tell.
        return try await channel.eventLoop.submit {
            let exchange = NIOLoopBound(try channel.pipeline.syncOperations.handler(type: LoopHTTPExchange.self), eventLoop: channel.eventLoop)
            let connection = LoopHTTPConnection(channel: channel, origin: origin, exchange: exchange)
            exchange.value.onIdleClose = { [weak connection] in if let connection { onIdleClose(connection) } }
            return connection
        }.get()
    }

    func close() { channel.close(promise: nil) }
}

/// What came back on one connection for one request.
struct LoopHTTPReply: Sendable {
    var head: HTTPResponseHead
    var body: [UInt8]
    var firstByte: NIODeadline
    var bytesSent: Int
    var bytesReceived: Int
    /// The connection may carry the next request.
    var reusable: Bool
}

/// Why an exchange failed.
enum LoopHTTPFailure: Error {
    case timeout(TimeAmount)
    case cancelled
    case shutdown
    /// The connection closed before the response ended; `early`: before any of it arrived.
    case closed(early: Bool)
    /// The body went past the request's limit, bytes.
    case tooLarge(Int)
    case failed(any Error)
}

/// The handler at the end of a connection's pipeline: one request at a time,
/// its response gathered (head, body, end), a deadline, and the connection's
/// close told to the pool while it is idle. Used on its channel's loop only: not Sendable, reached from elsewhere
/// through `LoopHTTPConnection.exchange` (a `NIOLoopBound`).
final class LoopHTTPExchange: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    let counter = ByteCounter()
    var onIdleClose: (@Sendable () -> Void)?
    private var context: ChannelHandlerContext?
    private var pending: EventLoopPromise<LoopHTTPReply>?
    private var head: HTTPResponseHead?
    private var body: [UInt8] = []
    private var firstByte: NIODeadline?
    private var sentBefore = 0, receivedBefore = 0
    private var deadline: Scheduled<Void>?
    /// The request asked the server to close after its response (`Connection: close`): the connection is done then,
    /// however soon the server's close arrives.
    private var closesAfter = false
    /// The request's `maxBodyBytes`.
    private var maxBody: Int?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Writes the request and completes with its response, on the channel's loop.
    func send(_ head: HTTPRequestHead, body: [UInt8]?, timeout: TimeAmount, maxBody: Int? = nil, promise: EventLoopPromise<LoopHTTPReply>) {
        guard let context, context.channel.isActive, pending == nil else {
            promise.fail(LoopHTTPFailure.closed(early: true))
            return
        }
        pending = promise
        closesAfter = !head.isKeepAlive
        self.maxBody = maxBody
        self.head = nil
        self.body = []
        firstByte = nil
        sentBefore = counter.sent
        receivedBefore = counter.received
        let me = NIOLoopBound(self, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: timeout) { me.value.fail(.timeout(timeout)) }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body, !body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Ends the request under way, if any, and closes the connection.
    func fail(_ failure: LoopHTTPFailure) {
        guard let promise = pending else { return }
        pending = nil
        deadline?.cancel()
        deadline = nil
        promise.fail(failure)
        context?.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard pending != nil else { return }  // nothing asked: dropped (the connection is closed at the end)
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            firstByte = .now()
        case .body(let buffer):
            if let maxBody, body.count + buffer.readableBytes > maxBody { return fail(.tooLarge(maxBody)) }
            body.append(contentsOf: buffer.readableBytesView)
        case .end:
            guard let promise = pending, let head, let firstByte else { return fail(.closed(early: false)) }
            pending = nil
            deadline?.cancel()
            deadline = nil
            let reply = LoopHTTPReply(head: head, body: body, firstByte: firstByte, bytesSent: counter.sent - sentBefore,
                                      bytesReceived: counter.received - receivedBefore, reusable: head.isKeepAlive && !closesAfter && context.channel.isActive)
            body = []
            promise.succeed(reply)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if pending != nil {
            fail(.closed(early: head == nil && counter.received == receivedBefore))
        } else {
            onIdleClose?()
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if pending != nil { fail(.failed(error)) } else { context.close(promise: nil) }
    }

    /// Bytes on the wire both ways (headers and bodies), counted next to the socket.
    final class ByteCounter: ChannelDuplexHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundIn = IOData
        var sent = 0, received = 0

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received += unwrapInboundIn(data).readableBytes
            context.fireChannelRead(data)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            sent += unwrapOutboundIn(data).readableBytes
            context.write(data, promise: promise)
        }
    }
}
