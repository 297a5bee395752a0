import Hummingbird
import NIOCore

/// A request's context: Hummingbird's, with the client's address (rate limits count per address).
struct ClientRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// The client's address without its port.
    var clientAddress: String { remoteAddress?.ipAddress ?? "unknown" }
}
