import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP client that sends exactly the bytes it is given: a hostile client, or a
/// WebSocket client that breaks the rules. Reads wait on a thread of their own,
/// so a test waiting for the server to act holds no cooperative thread.
final class RawClient: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw Failure(description: "connect: errno \(code)")
        }
        // A send to a server that stopped reading gives up rather than blocking the test.
        var limit = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    convenience init(_ url: String) throws {
        try self.init(port: URLComponents(string: url)!.port!)
    }

    deinit { close(fd) }

    /// Sends all of `bytes`; false when the server has closed (or reset) the connection first.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// `send` on a thread of its own, for a body large enough to block until the server reads it: a
    /// blocked cooperative thread would starve the in-process server of the threads it answers on.
    func sendWaiting(_ bytes: [UInt8]) async -> Bool {
        await withCheckedContinuation { done in
            Thread { done.resume(returning: self.send(bytes)) }.start()
        }
    }

    /// What the server sent until it closed the connection (`closed`), or until
    /// `seconds` passed or `enough` says so (`closed` false).
    func read(within seconds: Double, until enough: @escaping @Sendable ([UInt8]) -> Bool = { _ in false }) async -> (bytes: [UInt8], closed: Bool) {
        await withCheckedContinuation { done in
            Thread { done.resume(returning: self.readBlocking(within: seconds, until: enough)) }.start()
        }
    }

    /// `read` as text, for status lines.
    func readText(within seconds: Double) async -> (text: String, closed: Bool) {
        let (bytes, closed) = await read(within: seconds)
        return (String(decoding: bytes, as: UTF8.self), closed)
    }

    private func readBlocking(within seconds: Double, until enough: ([UInt8]) -> Bool) -> ([UInt8], Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !enough(received) {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return (received, false) }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                received += buffer[..<n]
            } else if n == 0 || errno == ECONNRESET {
                return (received, true)
            }
        }
        return (received, false)
    }
}
