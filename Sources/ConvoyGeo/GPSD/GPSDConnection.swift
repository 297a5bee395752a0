internal import CGPS
import Foundation

/// One libgps session (`gps_open` … `gps_close`), used by one thread at a time.
/// The only Swift that touches libgps: it owns and frees the C state and turns
/// return codes into `GPSDError`s.
///
/// It waits with poll(2) and reads the socket itself, one JSON line at a time
/// for libgps to parse (`gps_unpack`), rather than `gps_waiting`/`gps_read`:
/// libgps waits with select(2), and glibc aborts the whole process when the
/// socket's descriptor is 1024 or more — as it is when gpsd is (re)connected
/// in a process that already holds thousands of phones' connections.
final class GPSDConnection {
    /// What one `read()` brought: a position report, a sky report, or something else.
    enum Message {
        case tpv(GPSDReport)
        case sky(device: String, hdop: Double, satellites: Int?)
        case other
    }

    private let data: UnsafeMutablePointer<gps_data_t>
    private var isOpen = false
    /// What `recv` reads into, kept from read to read.
    private var buffer = [UInt8](repeating: 0, count: 65_536)
    /// Bytes read but not yet a whole line; whole lines read, `nextLine` the first not yet parsed.
    private var partial: [UInt8] = []
    private var lines: [[UInt8]] = []
    private var nextLine = 0
    private var closed = false
    /// gpsd's lines are short (a SKY with many satellites is a few kB); a longer one is not gpsd's.
    static let longestLine = 1 << 20

    /// Connects (blocking) and asks gpsd to stream JSON from every device.
    init(_ address: GPSDAddress) throws(GPSDError) {
        data = .allocate(capacity: 1)
        memset(data, 0, MemoryLayout<gps_data_t>.size)
        guard gps_open(address.host, String(address.port), data) == 0 else {
            let reason = String(cString: gps_errstr(errno))
            throw .unreachable("cannot connect to gpsd at \(address): \(reason)")
        }
        isOpen = true
        guard convoy_gps_watch(data) >= 0 else {
            throw .watchFailed("cannot send WATCH to gpsd at \(address): \(String(cString: gps_errstr(errno)))")
        }
    }

    deinit {
        if isOpen {
            _ = convoy_gps_unwatch(data)
            gps_close(data)
        }
        data.deallocate()
    }

    /// True when a message is waiting (or the connection has ended: `read` says so);
    /// waits at most `timeout` seconds.
    func waiting(timeout: Double) -> Bool {
        if nextLine < lines.count || closed { return true }
        lines.removeAll(keepingCapacity: true)
        nextLine = 0
        var p = pollfd(fd: data.pointee.gps_fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&p, 1, Int32(max(0, min(timeout, 3600)) * 1000))
        guard ready > 0 else { return false }
        let fd = data.pointee.gps_fd
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN) {
            closed = true
            return true
        }
        guard n > 0 else { return false }
        // Each byte is looked at once: whole lines out, the rest kept for the next read.
        var start = 0
        for i in 0..<n where buffer[i] == UInt8(ascii: "\n") {
            partial.append(contentsOf: buffer[start..<i])
            lines.append(partial)
            partial.removeAll(keepingCapacity: true)
            start = i + 1
        }
        partial.append(contentsOf: buffer[start..<n])
        if partial.count > Self.longestLine { closed = true }
        return !lines.isEmpty || closed
    }

    /// Parses one waiting line (call after `waiting` says there is one).
    func read() throws(GPSDError) -> Message {
        guard nextLine < lines.count else {
            if closed {
                throw .connectionLost(partial.count > Self.longestLine ? "gpsd sent a line over \(Self.longestLine) bytes"
                                                                     : "gpsd closed the connection")
            }
            return .other
        }
        let line = lines[nextLine]
        nextLine += 1
        return Self.message(line, into: data)
    }

    /// One line of gpsd's JSON (its `\r` aside) parsed by libgps into `data`, then read out.
    static func message(_ line: [UInt8], into data: UnsafeMutablePointer<gps_data_t>) -> Message {
        var line = line
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        // Only a JSON object of a class Convoy reads, without lists libgps spins on, reaches it (GPSDJSONCheck says why).
        guard GPSDJSONCheck.isReadable(line) else { return .other }
        line.append(0)
        convoy_gps_clear_set(data)
        let status = line.withUnsafeMutableBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { gps_unpack($0.baseAddress!, data) }
        }
        guard status >= 0 else { return .other }
        let device = String(cString: convoy_gps_device_path(data))
        if convoy_gps_read_tpv(data) != 0 {
            let fix = data.pointee.fix
            let time = fix.time.tv_sec == 0 && fix.time.tv_nsec == 0
                ? nil : Double(fix.time.tv_sec) + Double(fix.time.tv_nsec) / 1e9
            return .tpv(GPSDReport(mode: Int(fix.mode), device: device, time: time, latitude: fix.latitude,
                                   longitude: fix.longitude, altMSL: fix.altMSL, eph: fix.eph, speed: fix.speed,
                                   track: fix.track))
        }
        if convoy_gps_read_sky(data) != 0 {
            let used = data.pointee.satellites_used
            return .sky(device: device, hdop: data.pointee.dop.hdop, satellites: used > 0 ? Int(used) : nil)
        }
        return .other
    }
}
