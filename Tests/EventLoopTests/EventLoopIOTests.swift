#if canImport(Glibc)
import Glibc
#endif
import Posix
import Testing
import TestSupport

@testable import EventLoop

@Suite("EventLoop file-descriptor readiness")
struct EventLoopIOTests {
    @Test func pipeReadEndBecomesReadableWithTheWrittenBytes() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let (readEnd, writeEnd) = try FileDescriptor.pipe(nonBlocking: true)
        defer { readEnd.close(); writeEnd.close() }
        var received: [String] = []
        var events: [IOEvents] = []
        let registration = try loop.register(readEnd, interest: .readable) { ready in
            events.append(ready)
            received.append((try? readAvailable(readEnd)) ?? "<error>")
            loop.stop()
        }
        write("hello", to: writeEnd)
        try loop.runForTest()
        loop.deregister(registration)
        #expect(received == ["hello"])
        #expect(events.count == 1)
        #expect(events.first?.contains(.readable) == true)
        #expect(events.first?.contains(.hangup) == false)
    }

    @Test func idleSocketIsWritableButNotReadable() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let (left, right) = try FileDescriptor.socketPair(nonBlocking: true)
        defer { left.close(); right.close() }
        var seen: IOEvents = []
        _ = try loop.register(left, interest: [.readable, .writable]) { ready in
            seen = ready
            loop.stop()
        }
        try loop.runForTest()
        #expect(seen.contains(.writable))
        #expect(!seen.contains(.readable))
    }

    @Test func pipeReadEndReportsHangupWhenTheWriterCloses() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let (readEnd, writeEnd) = try FileDescriptor.pipe(nonBlocking: true)
        defer { readEnd.close() }
        var seen: IOEvents = []
        var readResult = "<not read>"
        var registration: IORegistration?
        registration = try loop.register(readEnd, interest: .readable) { ready in
            seen = ready
            readResult = (try? readAvailable(readEnd)) ?? "<error>"
            if let registration { loop.deregister(registration) }
            loop.stop()
        }
        writeEnd.close()
        try loop.runForTest()
        #expect(seen.contains(.hangup))
        #expect(readResult == "")  // end of file
        #expect(loop.registrationCount == 0)
    }

    @Test func socketReportsHangupWhenThePeerCloses() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let (left, right) = try FileDescriptor.socketPair(nonBlocking: true)
        defer { left.close() }
        var seen: IOEvents = []
        let registration = try loop.register(left, interest: .readable) { ready in
            seen = ready
            loop.stop()
        }
        // Close the peer from the loop, after it went idle: the hang-up must wake it.
        try loop.scheduleTimer(after: .milliseconds(5)) { right.close() }
        try loop.runForTest()
        loop.deregister(registration)
        #expect(seen.contains(.readHangup))
        #expect(seen.contains(.hangup))
    }

    @Test func deregisteringAnotherRegistrationDropsItsEventFromTheSameBatch() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let (a, aPeer) = try FileDescriptor.socketPair(nonBlocking: true)
        let (b, bPeer) = try FileDescriptor.socketPair(nonBlocking: true)
        defer { a.close(); aPeer.close(); b.close(); bPeer.close() }
        // Both are readable before the loop starts, so one epoll_wait returns both events.
        write("x", to: aPeer)
        write("y", to: bPeer)
        var calls: [String] = []
        var registrationA: IORegistration?
        var registrationB: IORegistration?
        registrationA = try loop.register(a, interest: .readable) { _ in
            calls.append("a")
            if let registrationA { loop.deregister(registrationA) }
            if let registrationB { loop.deregister(registrationB) }
            loop.stop()
        }
        registrationB = try loop.register(b, interest: .readable) { _ in
            calls.append("b")
            if let registrationA { loop.deregister(registrationA) }
            if let registrationB { loop.deregister(registrationB) }
            loop.stop()
        }
        try loop.runForTest()
        #expect(calls.count == 1, "the second handler must not run after it was deregistered: \(calls)")
        #expect(loop.registrationCount == 0)
    }

    @Test func reusedDescriptorNumberGetsOnlyTheNewHandler() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let (first, firstPeer) = try FileDescriptor.socketPair(nonBlocking: true)
        var calls: [String] = []
        var replacement: (FileDescriptor, FileDescriptor)?
        var firstRegistration: IORegistration?
        firstRegistration = try loop.register(first, interest: .readable) { _ in
            calls.append("old")
            // Deregister, then put a new socket on the same descriptor number. dup2 replaces
            // the old socket atomically, so a test running in parallel cannot take the number
            // in between (closing and waiting for the kernel to reuse it was racy).
            if let firstRegistration { loop.deregister(firstRegistration) }
            firstPeer.close()
            guard let pair = try? FileDescriptor.socketPair(nonBlocking: true) else { return }
            guard dup2(pair.0.rawValue, first.rawValue) == first.rawValue else { return }
            pair.0.close()
            replacement = (first, pair.1)
            _ = try? loop.register(first, interest: .readable) { _ in
                calls.append("new")
                loop.stop()
            }
            write("z", to: pair.1)
            // A stale deregistration of the old registration must not remove the new one.
            if let firstRegistration { loop.deregister(firstRegistration) }
        }
        write("x", to: firstPeer)
        try loop.runForTest()
        if let replacement { replacement.0.close(); replacement.1.close() }
        #expect(replacement != nil, "could not put a new socket on the old descriptor number")
        #expect(calls == ["old", "new"])
    }

    @Test func reregisterChangesTheReportedReadiness() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let (left, right) = try FileDescriptor.socketPair(nonBlocking: true)
        defer { left.close(); right.close() }
        var log: [String] = []
        let registration = try loop.register(left, interest: .readable) { ready in
            log.append(ready.contains(.writable) ? "writable" : "other")
            loop.stop()
        }
        try loop.scheduleTimer(after: .milliseconds(5)) {
            log.append("timer")
            #expect(throws: Never.self) { try loop.reregister(registration, interest: .writable) }
        }
        try loop.runForTest()
        #expect(log == ["timer", "writable"])
    }

    @Test func registeringTwiceOrARegularFileThrows() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let (readEnd, writeEnd) = try FileDescriptor.pipe(nonBlocking: true)
        defer { readEnd.close(); writeEnd.close() }
        let registration = try loop.register(readEnd, interest: .readable) { _ in }
        #expect(throws: Errno.fileExists) {
            _ = try loop.register(readEnd, interest: .readable) { _ in }
        }
        let file = try FileDescriptor.openReadOnly("/etc/passwd")
        defer { file.close() }
        #expect(throws: Errno.notPermitted) {
            _ = try loop.register(file, interest: .readable) { _ in }
        }
        loop.deregister(registration)
        #expect(throws: Errno.noEntry) { try loop.reregister(registration, interest: .writable) }
        loop.deregister(registration)  // twice: harmless
        #expect(loop.registrationCount == 0)
    }
}
