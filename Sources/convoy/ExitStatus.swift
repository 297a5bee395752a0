/// Convoy's exit codes, the same for every command (README, docs/cli.md).
enum ExitStatus: Int32 {
    /// Everything ran and every threshold passed.
    case ok = 0
    /// Something failed at run time (a server went away, a file could not be written).
    case runtimeFailure = 1
    /// The input was bad: arguments, a scenario, a GPX or NMEA file.
    case badInput = 2
    /// The run completed but failed: a threshold, a probe leak or a retention finding.
    case thresholdsFailed = 99
}

/// An error that carries the exit status it should end the process with.
struct CommandFailure: Error, CustomStringConvertible {
    let status: ExitStatus
    let message: String

    var description: String { message }

    static func badInput(_ message: String) -> CommandFailure { CommandFailure(status: .badInput, message: message) }
    static func runtime(_ message: String) -> CommandFailure { CommandFailure(status: .runtimeFailure, message: message) }
}
