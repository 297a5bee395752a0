internal import CGPS
import Foundation

/// One libgps session (`gps_open` … `gps_close`), used by one thread at a time.
/// The only Swift that touches libgps: it owns and frees the C state and turns
/// return codes into `GPSDError`s.
final class GPSDConnection {
    /// What one `read()` brought: a position report, a sky report, or something else.
    enum Message {
        case tpv(GPSDReport)
        case sky(device: String, hdop: Double, satellites: Int?)
        case other
    }

    private let data: UnsafeMutablePointer<gps_data_t>
    private var isOpen = false

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

    /// True when a message is waiting; waits at most `timeout` seconds.
    func waiting(timeout: Double) -> Bool {
        gps_waiting(data, Int32(max(0, timeout) * 1_000_000))
    }

    /// Reads one message (blocking; call after `waiting`).
    func read() throws(GPSDError) -> Message {
        convoy_gps_clear_set(data)
        errno = 0
        let status = gps_read(data, nil, 0)
        guard status >= 0 else {
            let code = errno
            throw .connectionLost("gpsd closed the connection" + (code != 0 ? " (\(String(cString: strerror(code))))" : ""))
        }
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
