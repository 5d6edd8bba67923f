#if canImport(Glibc)
import Glibc
#endif
import Posix
import Synchronization
import Testing

@Suite("FileDescriptor flags, pipes and sockets")
struct FileDescriptorTests {
    @Test func pipeIsCloseOnExecAndNonBlockingWhenAsked() throws {
        let (readEnd, writeEnd) = try FileDescriptor.pipe(nonBlocking: true)
        defer { readEnd.close(); writeEnd.close() }
        #expect(try readEnd.isCloseOnExec())
        #expect(try writeEnd.isCloseOnExec())
        #expect(try readEnd.isNonBlocking())
        var byte: UInt8 = 0
        #expect(throws: Errno.wouldBlock) {
            _ = try withUnsafeMutableBytes(of: &byte) { try readEnd.read(into: $0) }
        }
    }

    @Test func flagsCanBeToggled() throws {
        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        defer { readEnd.close(); writeEnd.close() }
        #expect(try !readEnd.isNonBlocking())
        try readEnd.setNonBlocking()
        #expect(try readEnd.isNonBlocking())
        try readEnd.setNonBlocking(false)
        #expect(try !readEnd.isNonBlocking())
        try readEnd.setCloseOnExec(false)
        #expect(try !readEnd.isCloseOnExec())
        try readEnd.setCloseOnExec()
        #expect(try readEnd.isCloseOnExec())
    }

    @Test func flagsOfAClosedDescriptorThrowBadFileDescriptor() throws {
        // Not a descriptor this test closed: tests run in parallel, and another may be handed
        // that number at once (and have its flags changed). No descriptor can be negative.
        let closed = FileDescriptor(rawValue: -1)
        #expect(throws: Errno.badFileDescriptor) { try closed.setNonBlocking() }
    }

    @Test func socketPairCarriesBytesBothWays() throws {
        let (left, right) = try FileDescriptor.socketPair()
        defer { left.close(); right.close() }
        let written = try Array("ping".utf8).withUnsafeBytes { try left.write(from: $0) }
        #expect(written == 4)
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = try buffer.withUnsafeMutableBytes { try right.read(into: $0) }
        #expect(Array(buffer[0..<count]) == Array("ping".utf8))
    }

    @Test func seqpacketPairKeepsMessageBoundaries() throws {
        let (left, right) = try FileDescriptor.socketPair(type: CInt(SOCK_SEQPACKET.rawValue), nonBlocking: true)
        defer { left.close(); right.close() }
        try left.writeAll("abc")
        try left.writeAll("de")
        var buffer = [UInt8](repeating: 0, count: 16)
        let first = try buffer.withUnsafeMutableBytes { try right.read(into: $0) }
        let second = try buffer.withUnsafeMutableBytes { try right.read(into: $0) }
        #expect([first, second] == [3, 2])
    }

    @Test func shortWriteIntoAFullNonBlockingPipeReportsWhatWasWritten() throws {
        let (readEnd, writeEnd) = try FileDescriptor.pipe(nonBlocking: true)
        defer { readEnd.close(); writeEnd.close() }
        let chunk = [UInt8](repeating: 7, count: 1 << 20)  // larger than the default 64 KiB pipe buffer
        let written = try chunk.withUnsafeBytes { try writeEnd.write(from: $0) }
        #expect(written > 0 && written < chunk.count)
        #expect(throws: Errno.wouldBlock) { _ = try chunk.withUnsafeBytes { try writeEnd.write(from: $0) } }
    }

    @Test func writingToAPipeWithoutReaderFailsWithBrokenPipe() throws {
        // SIGPIPE would end the test process; block it in this thread so the write reports EPIPE instead.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGPIPE)
        var old = sigset_t()
        pthread_sigmask(SIG_BLOCK, &set, &old)
        defer {
            var timeout = timespec(tv_sec: 0, tv_nsec: 0)
            while sigtimedwait(&set, nil, &timeout) == SIGPIPE {}
            pthread_sigmask(SIG_SETMASK, &old, nil)
        }
        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        defer { writeEnd.close() }
        readEnd.close()
        #expect(throws: Errno.brokenPipe) { try writeEnd.writeAll("x") }
    }
}

@Suite("PosixThread")
struct PosixThreadTests {
    @Test func spawnedThreadRunsItsBodyOnAnotherThreadBeforeJoinReturns() throws {
        let caller = UInt(pthread_self())
        let ranOn = Mutex<UInt?>(nil)
        let thread = try PosixThread.spawn(name: "a-rather-long-thread-name") {
            ranOn.withLock { $0 = UInt(pthread_self()) }
        }
        thread.join()
        let worker = try #require(ranOn.withLock { $0 })
        #expect(worker != caller)
        #expect(worker == UInt(thread.handle))
    }
}
