#if canImport(Glibc)
import Glibc
#endif
import Testing

@testable import BlueZ
import EventLoop
import Posix

/// The batch tick's reads (SPEC §19): one poll learns which notification sockets hold data, only those are read,
/// each with one `recvmmsg` that takes what is queued.
@Suite struct NotificationReadinessTests {
    /// Streams on `SOCK_SEQPACKET` socketpairs (BlueZ's `AcquireNotify` sockets), deferred, with what each delivers.
    final class Rig {
        let loop: EventLoop
        let readiness: NotificationReadiness?
        var streams: [NotificationStream] = []
        var peers: [FileDescriptor] = []
        /// Peers not yet closed: a descriptor closed twice may close another test's socket (tests run in parallel).
        var peerOpen: [Bool] = []
        var received: [[[UInt8]]] = []
        var times: [[Double]] = []
        var closed: [Bool] = []

        init(count: Int, mtu: Int = 23, readiness: Bool = true) throws {
            self.loop = try EventLoop()
            self.readiness = readiness ? try NotificationReadiness() : nil
            for index in 0..<count {
                let (ours, theirs) = try FileDescriptor.socketPair(type: CInt(SOCK_SEQPACKET.rawValue),
                                                                   nonBlocking: true)
                let stream = try NotificationStream(fileDescriptor: ours, mtu: mtu, loop: self.loop,
                                                    readiness: self.readiness)
                self.received.append([])
                self.times.append([])
                self.closed.append(false)
                stream.onNotification = { [unowned self] bytes, arrival in
                    self.received[index].append(Array(bytes))
                    self.times[index].append(arrival)
                }
                stream.onClose = { [unowned self] _ in self.closed[index] = true }
                stream.setReadMode(.deferred)
                self.streams.append(stream)
                self.peers.append(theirs)
                self.peerOpen.append(true)
            }
        }

        deinit {
            for stream in self.streams {
                stream.onClose = nil
                stream.close()
            }
            for (peer, open) in zip(self.peers, self.peerOpen) where open { peer.close() }
            self.loop.close()
        }

        /// The peer's hang-up (BlueZ dropping the socket).
        func hangUp(_ index: Int) {
            guard self.peerOpen[index] else { return }
            self.peerOpen[index] = false
            self.peers[index].close()
        }

        func send(_ index: Int, _ count: Int, size: Int = 20) throws {
            for k in 0..<count {
                let bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: k), count: size)
                let written = try bytes.withUnsafeBytes { try self.peers[index].write(from: $0) }
                #expect(written == size)
            }
        }

        /// What the agent's tick does: one poll, then every stream drained if it holds something.
        func tick() -> Int {
            self.readiness?.poll()
            return self.streams.reduce(0) { $0 + $1.drainIfQueued() }
        }

        var receiveCalls: UInt64 { self.streams.reduce(0) { $0 + $1.receiveCalls } }
    }

    @Test func aTickReadsOnlyTheSocketsThatHoldDataOneCallPerSixteen() throws {
        let rig = try Rig(count: 12)
        try rig.send(4, 3)
        try rig.send(7, 20)
        let before = Double(time(nil))
        #expect(rig.tick() == 23)
        #expect(rig.received[4].count == 3)
        #expect(rig.received[7].map { $0.first ?? 255 } == (0..<20).map { UInt8($0) })
        #expect(rig.received.enumerated().allSatisfy { $0.offset == 4 || $0.offset == 7 || $0.element.isEmpty })
        // Stream 4: one call takes its 3; stream 7: 16, then the 4 left (fewer than 16: the queue is empty). The
        // ten idle sockets cost nothing.
        #expect(rig.streams[4].receiveCalls == 1)
        #expect(rig.streams[7].receiveCalls == 2)
        #expect(rig.receiveCalls == 3)
        // Every notification carries the kernel's arrival time.
        #expect(rig.times[7].allSatisfy { abs($0 - before) < 5 })
        #expect(rig.streams.allSatisfy { $0.readTimeFallbacks == 0 })

        // A tick with nothing queued: no receive at all.
        #expect(rig.tick() == 0)
        #expect(rig.receiveCalls == 3)
        #expect(rig.readiness?.polls == 2)
    }

    /// A stream whose loop refuses the socket closes it and frees its buffer once: `deinit` still runs after a
    /// throwing class initialiser, and used to close the number again (another socket, once reused) and free the
    /// buffer twice (glibc aborts).
    @Test func aSocketTheLoopRefusesIsClosedOnceAndItsBufferFreedOnce() throws {
        let loop = try EventLoop()
        loop.close()
        let readiness = try NotificationReadiness()
        for _ in 0..<3 {
            let (ours, theirs) = try FileDescriptor.socketPair(type: CInt(SOCK_SEQPACKET.rawValue), nonBlocking: true)
            defer { theirs.close() }
            #expect(throws: Errno.self) {
                _ = try NotificationStream(fileDescriptor: ours, mtu: 23, loop: loop, readiness: readiness)
            }
            // Ours is closed: the peer sees the hang-up.
            let bytes: [UInt8] = [1]
            #expect(throws: Errno.self) { _ = try bytes.withUnsafeBytes { try theirs.write(from: $0) } }
        }
    }

    @Test func withoutAReadinessSetEverySocketIsAskedEveryTick() throws {
        let rig = try Rig(count: 12, readiness: false)
        try rig.send(4, 3)
        #expect(rig.tick() == 3)
        // 3 reads and one EAGAIN on stream 4, one EAGAIN on each of the other eleven.
        #expect(rig.receiveCalls == 3 + 1 + 11)
        #expect(rig.received[4].count == 3)
    }

    @Test func aHangUpIsSeenByThePollAndEndsTheStreamAfterItsData() throws {
        let rig = try Rig(count: 3)
        try rig.send(1, 2)
        rig.hangUp(1)
        #expect(rig.tick() == 2)
        #expect(rig.received[1].count == 2)
        #expect(rig.closed == [false, true, false])
        #expect(!rig.streams[1].isOpen)
        #expect(rig.readiness?.registered == 2)
        // The others still work.
        try rig.send(2, 1)
        #expect(rig.tick() == 1)
        #expect(rig.received[2].count == 1)
    }

    @Test func aNotificationLongerThanTheMTUIsCutAndCountedAsBefore() throws {
        for readiness in [true, false] {
            let rig = try Rig(count: 1, mtu: 23, readiness: readiness)
            try rig.send(0, 1, size: 40)
            try rig.send(0, 1, size: 24)
            #expect(rig.tick() == 2)
            // The buffer holds the MTU and one byte: a 40-byte datagram is cut to 24 and counted; one of 24 fits.
            #expect(rig.received[0].map(\.count) == [24, 24])
            #expect(rig.streams[0].truncated == 1)
        }
    }

    @Test func aStreamDrainedFromInsideAnotherStreamsHandlerReadsOnItsOwn() throws {
        let rig = try Rig(count: 2)
        var nested = 0
        // As a notification that closes the device drains the device's other streams.
        rig.streams[0].onNotification = { [unowned rig] bytes, _ in
            rig.received[0].append(Array(bytes))
            if nested == 0 { nested = rig.streams[1].drain() }
        }
        try rig.send(0, 5)
        try rig.send(1, 4)
        rig.readiness?.poll()
        #expect(rig.streams[0].drainIfQueued() == 5)
        #expect(nested == 4)
        #expect(rig.received[0].count == 5)
        #expect(rig.received[1].map { $0.first ?? 255 } == [0, 1, 2, 3])
        // The nested drain read a notification per call into its own buffer (and one more that found none).
        #expect(rig.streams[1].receiveCalls == 5)
        #expect(rig.streams[0].receiveCalls == 1)
    }

    @Test func anMTUBeyondTheSharedSlotsReadsOnItsOwn() throws {
        let rig = try Rig(count: 1, mtu: 600)
        #expect(rig.readiness?.registered == 0)
        try rig.send(0, 2, size: 550)
        #expect(rig.tick() == 2)
        #expect(rig.received[0].map(\.count) == [550, 550])
    }
}
