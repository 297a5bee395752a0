import ArgumentParser
import ConvoyCrypto
import ConvoySodium
import ConvoyGeo
import ConvoyWire
import Foundation

@main
struct Convoy: AsyncParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "convoy",
        abstract: "Load-test end-to-end-encrypted location-sharing backends with fleets of virtual phones.",
        discussion: """
            Exit codes: 0 ok, 1 runtime failure, 2 bad input, 99 thresholds failed (or a probe leaked, or retention broke).
            Docs: README.md and docs/ in the repository.
            """,
        version: "convoy \(version) (libsodium \(CryptoLibrary.sodiumVersion), \(Curl.versionDescription), libgps API \(GPSDLibrary.apiVersion))",
        subcommands: [Run.self, Live.self, Serve.self, Schema.self, Merge.self, Dashboard.self, Report.self, Battery.self, Probe.self, App.self, Gpx.self])

    /// Parses, runs, and maps every outcome onto `ExitStatus`.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let (status, message, toStdout) = outcome(of: error)
            if !message.isEmpty {
                if toStdout {
                    print(message)
                } else {
                    FileHandle.standardError.write(Data((message + "\n").utf8))
                }
            }
            Foundation.exit(status.rawValue)
        }
        Foundation.exit(ExitStatus.ok.rawValue)
    }

    private static func outcome(of error: any Error) -> (ExitStatus, String, Bool) {
        switch error {
        case let failure as CommandFailure:
            return (failure.status, "convoy: error: \(failure.message)", false)
        case let geo as GeoError:
            return (geo.isRuntimeFailure ? .runtimeFailure : .badInput, "convoy: error: \(geo)", false)
        case let crypto as CryptoError:
            return (.badInput, "convoy: error: \(crypto)", false)
        default:
            // ArgumentParser: help and --version succeed, usage errors are bad
            // input; anything else that reaches here failed at run time.
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success { return (.ok, message, true) }
            if code == .validationFailure { return (.badInput, message, false) }
            return (.runtimeFailure, message.isEmpty ? "convoy: error: \(error)" : message, false)
        }
    }
}
