internal import CGPS
import Foundation

/// gpsd's JSON lines read as `GPSDSource` reads them (libgps's `gps_unpack`, then Convoy's reading of TPV and SKY),
/// with no gpsd: what the fuzz target (ConvoyFuzz) runs. One instance per thread.
package final class GPSDLineReader {
    /// What one line brought: a TPV's report, a SKY's HDOP and satellites, or nothing Convoy reads.
    package enum Reading: Equatable {
        case tpv(GPSDReport)
        case sky(hdop: Double, satellites: Int?)
        case other
    }

    private let data: UnsafeMutablePointer<gps_data_t>

    package init() {
        data = .allocate(capacity: 1)
        memset(data, 0, MemoryLayout<gps_data_t>.size)
    }

    deinit { data.deallocate() }

    package func read(_ line: [UInt8]) -> Reading {
        switch GPSDConnection.message(line, into: data) {
        case .tpv(let report): .tpv(report)
        case .sky(_, let hdop, let satellites): .sky(hdop: hdop, satellites: satellites)
        case .other: .other
        }
    }
}
