import ConvoyServer
import Foundation
import Synchronization

/// What a hostile phone sends `convoy serve` over HTTP/1.1, raw: the bytes go to a server in this process (Green
/// Box's, in-memory SQLite) on a connection of their own, which is then half-closed and read to its end.
enum FuzzHTTP {
    /// The server's port and anon key.
    private static let server: (port: Int, anon: String) = Blocking.run {
        do {
            let server = try await EmbeddedServer.start(.testing)
            Parked.servers.withLock { $0.append(server) }
            return (URLComponents(string: server.keys.url)?.port ?? 0, server.keys.anonKey)
        } catch {
            fatalError("fuzz target http: convoy serve did not start: \(error)")
        }
    }
    private static var port: Int { server.port }
    /// What an input writes where the server's anon key goes (its value changes with each start).
    static let anonPlaceholder = Array("{{anon}}".utf8)

    static let target = FuzzTarget(
        name: "http",
        summary: "raw HTTP/1.1 requests to convoy serve (limits, parser, routes; {{anon}} is its anon key); every answer is a status line with a "
            + "code from 100 to 599, a head over 64 KiB is refused with 431, and the server answers the next request",
        prepare: { _ = server }
    ) { bytes in
        var inv = Invariants()
        let answer = exchange(withAnonKey(bytes.array))
        let statuses = statusCodes(answer)
        inv.accepted = statuses.first.map { (200..<300).contains($0) } ?? false
        inv.expect(answer.isEmpty || answer.starts(with: Array("HTTP/1.1 ".utf8)),
                   "an answer that is no HTTP/1.1 response: \(String(decoding: answer.prefix(80), as: UTF8.self))")
        inv.expect(statuses.allSatisfy { (100...599).contains($0) }, "status codes \(statuses)")
        let head = bytes.array.firstRange(of: Array("\r\n\r\n".utf8))?.lowerBound ?? bytes.count
        if head > 64 * 1024 + 1024, let first = statuses.first {
            inv.expect(first == 431 || first == 400, "a head of \(head) bytes answered \(first)")
        }
        let health = statusCodes(exchange(Array("GET /auth/v1/health HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n".utf8)))
        inv.expect(!health.isEmpty, "the server did not answer the next request")
        return inv
    }

    /// The input with each `{{anon}}` replaced by the server's anon key.
    static func withAnonKey(_ input: [UInt8]) -> [UInt8] {
        guard input.firstRange(of: anonPlaceholder) != nil else { return input }
        return Array(input.split(separator: anonPlaceholder, omittingEmptySubsequences: false)
            .joined(separator: Array(server.anon.utf8)))
    }

    /// The status codes of each response's status line, in order.
    static func statusCodes(_ answer: [UInt8]) -> [Int] {
        let text = String(decoding: answer, as: UTF8.self)
        return text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { Int($0.prefix(3)) ?? -1 }
    }

    /// `request` written on a new connection, which is then half-closed; what came back until the server closed.
    static func exchange(_ request: [UInt8]) -> [UInt8] {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return [] }
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { break }
            sent += n
        }
        shutdown(fd, Int32(SHUT_WR))
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            answer += buffer[..<n]
        }
        return answer
    }
}

/// Servers kept running for the process's life.
enum Parked {
    static let servers = Mutex<[EmbeddedServer]>([])
}
