import Logging
import NIOCore
import NIOPosix

/// Out of file descriptors, accept(2) fails with EMFILE or ENFILE and leaves the
/// connection queued, so the listening socket stays readable and the event loop
/// would call accept again at once, for ever: a core at 100 %, nobody served.
/// NIO's own `AcceptBackoffHandler` cannot stop that (the failed accept leaves a
/// read pending, so the socket stays registered), so this handler, first on the
/// listening channel, stops reading for `pause` and then tries again.
final class AcceptPause: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    static let pause = TimeAmount.milliseconds(100)

    private let logger: Logger
    private var paused = false
    /// Said once until a connection is accepted again.
    private var warned = false

    init(logger: Logger) {
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        warned = false
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let io = error as? IOError, io.errnoCode == EMFILE || io.errnoCode == ENFILE, !paused {
            if !warned {
                logger.warning("out of file descriptors: accepting paused \(Self.pause.nanoseconds / 1_000_000) ms at a time until connections close",
                               metadata: ["errno": "\(io.errnoCode)"])
                warned = true
            }
            paused = true
            let options = context.channel.syncOptions
            try? options?.setOption(ChannelOptions.autoRead, value: false)
            context.eventLoop.assumeIsolated().scheduleTask(in: Self.pause) { [self] in
                paused = false
                try? options?.setOption(ChannelOptions.autoRead, value: true)
            }
        }
        context.fireErrorCaught(error)
    }
}

@available(*, unavailable)
extension AcceptPause: Sendable {}

extension AcceptPause {
    /// Puts the pause first on `listener`, before NIO's back-off handler, which keeps the error to itself.
    static func install(on listener: any Channel, logger: Logger) async {
        try? await listener.eventLoop.submit {
            try listener.pipeline.syncOperations.addHandler(AcceptPause(logger: logger), position: .first)
        }.get()
    }
}
