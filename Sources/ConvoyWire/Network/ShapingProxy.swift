import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// Where a phone's connections go to be shaped: an HTTP CONNECT proxy on
/// loopback, and the header that says which phone is asking.
public struct TunnelProxy: Sendable, Equatable {
    public var host: String
    public var port: Int
    /// `X-Convoy-Phone: <index>`, sent with each CONNECT.
    public var phone: Int

    public static let header = "X-Convoy-Phone"

    public var url: String { "http://\(host):\(port)" }
}

/// The network-conditions layer: an HTTP CONNECT proxy on loopback, in this
/// process, on SwiftNIO. Each phone with conditions opens every connection —
/// libcurl's (`CURLOPT_PROXY` with a tunnel) and its Realtime websocket
/// (`RealtimeSocket`'s CONNECT) — as a tunnel through it, naming itself in
/// `X-Convoy-Phone`; the proxy connects to the backend and relays the bytes
/// both ways through that phone's `NetworkLink`. So every byte is shaped,
/// TLS included (it passes through the tunnel end to end), without root and
/// without touching the machine's network (docs/network.md says why this and
/// not netem).
///
/// A phone that is offline gets `503` for a new tunnel; when its link says an
/// offline window began or a reset came, its open tunnels are closed (as a
/// phone's sockets are aborted when its network goes away).
public final class ShapingProxy: Sendable {
    public let port: Int
    private let channel: any Channel
    private let core: Core
    private let sweep: RepeatedTask

    /// What the handlers share: the links by phone, and each phone's open tunnels.
    final class Core: Sendable {
        let links: [Int: NetworkLink]
        let logger: Logger
        private let open = Mutex<[Int: [ObjectIdentifier: [any Channel]]]>([:])
        /// Per phone: tunnels opened, and times its tunnels were cut.
        let counts = Mutex<[Int: (tunnels: Int, cuts: Int)]>([:])

        init(links: [Int: NetworkLink], logger: Logger) {
            self.links = links
            self.logger = logger
        }

        func opened(_ phone: Int, _ client: any Channel, _ server: any Channel) {
            // Cuts that came while the phone had no tunnel open are past: they must not close this new one.
            _ = links[phone]?.cut(at: ShapingProxy.now())
            counts.withLock { $0[phone, default: (0, 0)].tunnels += 1 }
            open.withLock { $0[phone, default: [:]][ObjectIdentifier(client)] = [client, server] }
        }

        func closed(_ phone: Int, _ client: any Channel) {
            open.withLock { $0[phone]?[ObjectIdentifier(client)] = nil }
        }

        /// Closes the open tunnels of every phone whose link was cut since the last sweep.
        func sweep(now: Double) {
            let phones = open.withLock { Array($0.keys) }
            for phone in phones {
                guard let link = links[phone], link.cut(at: now) else { continue }
                let channels = open.withLock { $0.removeValue(forKey: phone) } ?? [:]
                if !channels.isEmpty { counts.withLock { $0[phone, default: (0, 0)].cuts += 1 } }
                for pair in channels.values { for c in pair { c.close(promise: nil) } }
            }
        }
    }

    /// Seconds on the proxy's clock (the links' time base): NIO's monotonic uptime.
    public static func now() -> Double { Double(NIODeadline.now().uptimeNanoseconds) / 1e9 }

    /// Starts the proxy on 127.0.0.1 (a free port) for these phones' links.
    public static func start(links: [Int: NetworkLink], logger: Logger,
                             group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws -> ShapingProxy {
        let core = Core(links: links, logger: logger)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 1024)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture { try child.pipeline.syncOperations.addHandler(ConnectHandler(core: core), name: ConnectHandler.name) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let sweep = channel.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(100), delay: .milliseconds(100)) { _ in
            core.sweep(now: ShapingProxy.now())
        }
        return ShapingProxy(port: channel.localAddress?.port ?? 0, channel: channel, core: core, sweep: sweep)
    }

    private init(port: Int, channel: any Channel, core: Core, sweep: RepeatedTask) {
        (self.port, self.channel, self.core, self.sweep) = (port, channel, core, sweep)
    }

    /// The proxy settings for `phone`.
    public func tunnel(for phone: Int) -> TunnelProxy { TunnelProxy(host: "127.0.0.1", port: port, phone: phone) }

    /// Tunnels these phones opened, times their open tunnels were cut (offline windows and resets), and the share
    /// of their time, from each one's arrival to now, that their offline windows took (nil: none arrived).
    public func figures(phones: some Sequence<Int>) -> (tunnels: Int, cuts: Int, offlineShare: Double?) {
        let counts = core.counts.withLock { $0 }
        let now = Self.now()
        var (tunnels, cuts, offline, total) = (0, 0, 0.0, 0.0)
        for phone in phones {
            let c = counts[phone] ?? (0, 0)
            (tunnels, cuts) = (tunnels + c.tunnels, cuts + c.cuts)
            if let time = core.links[phone]?.offlineTime(until: now) { (offline, total) = (offline + time.offline, total + time.total) }
        }
        return (tunnels, cuts, total > 0 ? offline / total : nil)
    }

    public func stop() async {
        sweep.cancel()
        try? await channel.close()
    }
}

/// Reads a tunnel's `CONNECT host:port` head, connects to the backend, answers after the
/// handshake's round trip, and hands both sides to `RelayHandler`s.
final class ConnectHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    static let name = "convoy.connect"
    static let longestHead = 8_192

    private let core: ShapingProxy.Core
    private var head = ByteBuffer()
    private var connecting = false

    init(core: ShapingProxy.Core) { self.core = core }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var chunk = unwrapInboundIn(data)
        head.writeBuffer(&chunk)
        guard !connecting else { return }
        let view = head.readableBytesView
        guard let end = view.firstRange(of: Array("\r\n\r\n".utf8)) else {
            if head.readableBytes > Self.longestHead { refuse(context, "431 Request Header Fields Too Large") }
            return
        }
        let text = String(decoding: view[view.startIndex..<end.lowerBound], as: UTF8.self)
        let rest = head.getSlice(at: end.upperBound, length: view.endIndex - end.upperBound) ?? ByteBuffer()
        let lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        let request = lines.first?.split(separator: " ") ?? []
        guard request.count == 3, request[0] == "CONNECT", let colon = request[1].lastIndex(of: ":"),
              let port = Int(request[1][request[1].index(after: colon)...]) else { return refuse(context, "400 Bad Request") }
        let host = String(request[1][..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let phone = lines.dropFirst().compactMap { line -> Int? in
            guard let c = line.firstIndex(of: ":"), line[..<c].lowercased() == TunnelProxy.header.lowercased() else { return nil }
            return Int(line[line.index(after: c)...].trimmingCharacters(in: .whitespaces))
        }.first
        guard let phone, let link = core.links[phone] else { return refuse(context, "403 Forbidden") }
        if link.isOffline(at: ShapingProxy.now()) { return refuse(context, "503 No Network") }
        connecting = true
        context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
        let client = context.channel
        let loop = context.eventLoop
        let core = self.core
        ClientBootstrap(group: loop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .connect(host: host, port: port)
            .whenComplete { result in
                switch result {
                case .failure:
                    client.writeAndFlush(ByteBuffer(string: "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")).whenComplete { _ in client.close(promise: nil) }
                case .success(let server):
                    let open: @Sendable () -> Void = {
                        guard client.isActive else {
                            server.close(promise: nil)
                            return
                        }
                        do {
                            try server.pipeline.syncOperations.addHandler(RelayHandler(peer: client, link: link, direction: .down, phone: phone, core: nil))
                            try client.pipeline.syncOperations.addHandler(RelayHandler(peer: server, link: link, direction: .up, phone: phone, core: core))
                        } catch {
                            client.close(promise: nil)
                            server.close(promise: nil)
                            return
                        }
                        core.opened(phone, client, server)
                        client.writeAndFlush(ByteBuffer(string: "HTTP/1.1 200 Connection Established\r\n\r\n"), promise: nil)
                        if rest.readableBytes > 0 { server.writeAndFlush(rest, promise: nil) }
                        client.pipeline.removeHandler(name: ConnectHandler.name).whenComplete { _ in
                            client.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
                        }
                    }
                    // The phone's TCP handshake with the backend: one round trip before the tunnel carries anything.
                    let wait = link.handshake
                    if wait > 0 { loop.scheduleTask(in: .nanoseconds(Int64(wait * 1e9))) { open() } } else { open() }
                }
            }
    }

    private func refuse(_ context: ChannelHandlerContext, _ status: String) {
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 \(status)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")))
            .whenComplete { _ in channel.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}

/// Relays one direction of a tunnel through the phone's link: each chunk read is written to the
/// other side when the link says it arrives; the other side closes after the last arrival.
final class RelayHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let peer: any Channel
    private let link: NetworkLink
    private let direction: NetworkLink.Direction
    private let phone: Int
    /// The client side tells the proxy when the tunnel is gone.
    private let core: ShapingProxy.Core?
    private var lastArrival = 0.0

    init(peer: any Channel, link: NetworkLink, direction: NetworkLink.Direction, phone: Int, core: ShapingProxy.Core?) {
        (self.peer, self.link, self.direction, self.phone, self.core) = (peer, link, direction, phone, core)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let chunk = unwrapInboundIn(data)
        let now = ShapingProxy.now()
        let at = link.arrival(of: chunk.readableBytes, at: now, direction: direction, after: lastArrival)
        lastArrival = at
        let peer = self.peer
        if at <= now {
            peer.writeAndFlush(chunk, promise: nil)
        } else {
            context.eventLoop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(at * 1e9))) { peer.writeAndFlush(chunk, promise: nil) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        core?.closed(phone, context.channel)
        let peer = self.peer
        let at = lastArrival
        if at > ShapingProxy.now() {
            context.eventLoop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(at * 1e9))) { peer.close(promise: nil) }
        } else {
            peer.close(promise: nil)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}
