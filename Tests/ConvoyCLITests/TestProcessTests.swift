import ConvoyTestSupport
import Foundation
import Glibc
import Testing

/// The tests' own child processes (Tests/Support/TestProcess.swift): output through pipes, exit codes and
/// signals as Foundation's `Process` reports them, and nothing of the test process's descriptors inherited.
@Suite struct TestProcessTests {
    static func shell(_ script: String) -> (TestProcess, Pipe, Pipe) {
        let p = TestProcess(), out = Pipe(), err = Pipe()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", script]
        (p.standardOutput, p.standardError) = (out, err)
        return (p, out, err)
    }

    @Test func outputAndExitStatusComeBack() throws {
        let (p, out, err) = Self.shell("echo out; echo err >&2; exit 3")
        try p.run()
        let o = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let e = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(o == "out\n" && e == "err\n")
        #expect(!p.isRunning && p.terminationStatus == 3 && p.terminationReason == .exit && p.processIdentifier > 0)
    }

    @Test func aSignalEndsItAndTheHandlerHearsOnce() async throws {
        let (p, _, _) = Self.shell("exec sleep 30")
        let heard = try await withCheckedThrowingContinuation { (done: CheckedContinuation<Int32, any Error>) in
            p.terminationHandler = { done.resume(returning: $0.terminationStatus) }
            do { try p.run() } catch { done.resume(throwing: error) }
            #expect(p.isRunning)
            p.terminate()
        }
        p.waitUntilExit()
        #expect(heard == SIGTERM && p.terminationReason == .uncaughtSignal && !p.isRunning)
    }

    @Test func theChildInheritsNoOtherDescriptor() throws {
        // A descriptor without close-on-exec, as some libraries open them: the child must not get it.
        let leaky = open("/dev/null", O_RDONLY)
        try #require(leaky > 2)
        defer { close(leaky) }
        let (p, out, _) = Self.shell("ls /proc/self/fd")
        try p.run()
        let listed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n").compactMap { Int32($0) }
        p.waitUntilExit()
        // 0, 1, 2 and the descriptor ls reads the directory with.
        #expect(listed.count <= 4 && !listed.contains(leaky) && Set([0, 1, 2]).isSubset(of: Set(listed)), "\(listed)")
    }

    @Test func aMissingExecutableIsAnError() {
        let p = TestProcess()
        p.executableURL = URL(fileURLWithPath: "/nonexistent/convoy-test")
        #expect(throws: TestProcess.SpawnError.self) { try p.run() }
        #expect(!p.isRunning)
    }
}
