import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A relay in front of a server on 127.0.0.1 that loses one request's answer, as a reset on a bad network
/// does: request `lose` (counted over every connection, from 1) is carried to the server and its whole answer
/// read (`forward`: the server has done it), or not carried at all; then the client's connection is closed
/// without a byte. Every other request is relayed, one at a time, answer after request. Requests and answers
/// must carry `Content-Length` (no chunked bodies): what `convoy serve` and Convoy's clients send.
final class AnswerLosingProxy: @unchecked Sendable {
    let port: Int
    /// Requests seen, and the paths of those whose answers were lost.
    let seen = Mutex<(requests: Int, lost: [String])>((0, []))
    private let fd: Int32

    init(upstream: Int, lose: Int, forward: Bool) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw POSIXError(.EADDRNOTAVAIL) }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                Thread { [self] in relay(client, upstream: upstream, lose: lose, forward: forward) }.start()
            }
        }.start()
    }

    func stop() { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }

    private func relay(_ client: Int32, upstream: Int, lose: Int, forward: Bool) {
        defer { close(client) }
        let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(server) }
        var address = Self.loopback(port: upstream)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { return }
        var fromClient: [UInt8] = [], fromServer: [UInt8] = []
        while let request = Self.message(from: client, buffer: &fromClient) {
            let number = seen.withLock { $0.requests += 1; return $0.requests }
            if number == lose {
                let line = String(decoding: request.prefix { $0 != 0x0D }, as: UTF8.self)
                if !forward || (Self.write(server, request) && Self.message(from: server, buffer: &fromServer) != nil) {
                    seen.withLock { $0.lost.append(line) }
                }
                return
            }
            guard Self.write(server, request), let answer = Self.message(from: server, buffer: &fromServer), Self.write(client, answer) else { return }
        }
    }

    /// One HTTP message (head and `Content-Length` body) read from `fd`; nil at the end of the stream.
    private static func message(from fd: Int32, buffer: inout [UInt8]) -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 16384)
        func fill() -> Bool {
            let n = read(fd, &chunk, chunk.count)
            guard n > 0 else { return false }
            buffer += chunk[0..<n]
            return true
        }
        let end = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while headEnd == nil {
            headEnd = buffer.indices.dropLast(3).first { buffer[$0..<$0 + 4].elementsEqual(end) }.map { $0 + 4 }
            if headEnd == nil, !fill() { return nil }
        }
        let head = String(decoding: buffer[..<headEnd!], as: UTF8.self).lowercased()
        let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        #expect(!head.contains("transfer-encoding: chunked"), "AnswerLosingProxy reads Content-Length bodies only")
        while buffer.count < headEnd! + length { if !fill() { return nil } }
        let message = Array(buffer[..<(headEnd! + length)])
        buffer.removeFirst(headEnd! + length)
        return message
    }

    private static func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + sent, $0.count - sent) }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }
}
