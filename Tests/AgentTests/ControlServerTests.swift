#if canImport(Glibc)
import Glibc
#endif
@testable import Agent
import EventLoop
import Foundation
import Logging
import Testing
import TestSupport

/// The control socket is core set-up: when it cannot be served the agent refuses to start, with one line that
/// names the socket and the cause (it used to log and run on without it).
@Suite struct ControlServerTests {
    static func open(_ path: String, _ loop: EventLoop) throws(AgentError) -> ControlServer {
        try ControlServer(path: path, loop: loop, logger: .discarding) { _ in "{}" }
    }

    static func expectRefusal(_ message: String, sourceLocation: SourceLocation = #_sourceLocation,
                              _ body: () throws -> Void) {
        #expect(sourceLocation: sourceLocation) { try body() } throws: { error in
            (error as? AgentError)?.message == message
        }
    }

    @Test func aPathThatIsNotASocketIsRefused() throws {
        let directory = try makeTemporaryDirectory("control")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = try EventLoop()
        defer { loop.close() }
        let path = directory + "/control.sock"
        FileManager.default.createFile(atPath: path, contents: Data("keep me".utf8))
        Self.expectRefusal("control socket \(path) exists and is not a socket; not replacing it") {
            _ = try Self.open(path, loop)
        }
        #expect(FileManager.default.contents(atPath: path) == Data("keep me".utf8))
    }

    @Test func aPathTooLongForSunPathIsRefused() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let path = "/tmp/" + String(repeating: "x", count: 120)
        Self.expectRefusal("control socket path \(path) is too long") { _ = try Self.open(path, loop) }
    }

    @Test func aSocketServedByARunningAgentIsLeftAlone() throws {
        let directory = try makeTemporaryDirectory("control")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loop = try EventLoop()
        defer { loop.close() }
        let path = directory + "/control.sock"
        let first = try Self.open(path, loop)
        defer { first.close() }
        Self.expectRefusal("control socket \(path) is in use by a running agent (another empalinkd on this "
                               + "configuration?); not replacing it") { _ = try Self.open(path, loop) }
    }
}
