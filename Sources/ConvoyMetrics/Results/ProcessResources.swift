import Foundation

/// What this process has used: CPU time and resident memory, for the
/// harness's own cost (CPU per delivered update, memory per device).
public struct ProcessResources: Codable, Sendable, Equatable {
    public var cpuUserSeconds: Double
    public var cpuSystemSeconds: Double
    /// Resident set now, and its peak so far, MiB.
    public var rssMiB: Double
    public var maxRSSMiB: Double

    enum CodingKeys: String, CodingKey {
        case cpuUserSeconds = "cpu_user_s"
        case cpuSystemSeconds = "cpu_system_s"
        case rssMiB = "rss_mib"
        case maxRSSMiB = "max_rss_mib"
    }

    public var cpuSeconds: Double { cpuUserSeconds + cpuSystemSeconds }

    public static func current() -> ProcessResources {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return ProcessResources(cpuUserSeconds: seconds(usage.ru_utime), cpuSystemSeconds: seconds(usage.ru_stime),
                                rssMiB: residentMiB(), maxRSSMiB: Double(usage.ru_maxrss) / 1024)
    }

    /// VmRSS from /proc/self/status (0 where there is no /proc).
    static func residentMiB() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kb = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kb / 1024
    }
}
