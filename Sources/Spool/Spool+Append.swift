import Glibc

extension Spool {
    /// Appends one message; never blocks and, in steady state, never allocates.
    ///
    /// The record is framed into the ring for the writer thread; it is on disk after the writer's next pass and
    /// durable after its next group commit (``SpoolMetrics/durableSequence``). When `max_bytes` would be
    /// exceeded, `on_full` decides: `drop_newest` refuses this record, `drop_oldest` deletes the oldest
    /// segment(s) and counts their unacknowledged records.
    ///
    /// - Parameters:
    ///   - key: the (device, stream) key from ``streamKey(_:)``.
    ///   - topic: the MQTT topic's bytes.
    ///   - message: the payload, kept byte-identical for replay.
    ///   - qos: the QoS it is to be published with.
    ///   - retain: the retain flag it is to be published with.
    ///   - timestamp: append time in microseconds since 1970; `nil` reads the clock.
    ///   - inFlight: `true` when the caller is publishing it live right now (`always` mode): replay skips it
    ///     unless ``rewindReplay()`` is called before its acknowledgement.
    /// - Returns: the record's id, or why it was dropped (also counted in ``metrics``).
    @discardableResult
    public func append(
        key: SpoolStreamKey,
        topic: UnsafeRawBufferPointer,
        message: UnsafeRawBufferPointer,
        qos: UInt8 = 1,
        retain: Bool = false,
        timestamp: Int64? = nil,
        inFlight: Bool = false
    ) -> SpoolAppendResult {
        self.eventLoop.assertInEventLoop()
        guard !self.isClosed else { return self.drop(.closed) }
        guard Int(key.index) < self.keyBytes.count, topic.count <= Int(UInt16.max),
              message.count <= SpoolFrame.maxMessageSize
        else {
            return self.drop(.tooLarge)
        }
        let frameSize = self.keyBytes[Int(key.index)].withUnsafeBytes { keyBytes in
            SpoolFrame.frameSize(keyCount: keyBytes.count, topicCount: topic.count, messageCount: message.count)
        }
        // Make room under max_bytes first.
        while self.state.bytes + frameSize > self.options.maxBytes {
            switch self.options.onFull {
            case .dropNewest:
                return self.drop(.fullNewest)
            case .dropOldest:
                if !self.evictOldestSegment() { return self.drop(.fullNewest) }
            }
        }
        let sequence = self.nextSequence
        let time = timestamp ?? Self.realtimeMicroseconds()
        // Not `segments.last`: unspecialised in debug builds, it allocates on every append.
        guard !self.segments.isEmpty else { return self.drop(.closed) }
        let active = self.segments[self.segments.count - 1]
        // A roll either starts a new segment here, or was already entered by an eviction (`pendingRoll`).
        let newSegment = !self.pendingRoll && active.bytes > 0 && active.bytes + frameSize > self.options.segmentBytes
        let roll = newSegment || self.pendingRoll
        let segmentNumber = newSegment ? active.number + 1 : active.number

        let entry = self.scratch
        entry.storeBytes(of: UInt32(frameSize), toByteOffset: 0, as: UInt32.self)
        entry.storeBytes(of: roll ? SpoolWriter.rollFlag : 0, toByteOffset: 4, as: UInt32.self)
        entry.storeBytes(of: segmentNumber, toByteOffset: 8, as: UInt64.self)
        let frame = UnsafeMutableRawBufferPointer(
            rebasing: entry[SpoolWriter.entryHeaderSize..<(SpoolWriter.entryHeaderSize + frameSize)]
        )
        self.keyBytes[Int(key.index)].withUnsafeBytes { keyBytes in
            _ = SpoolFrame.encode(
                into: frame, sequence: sequence, timestamp: time, key: keyBytes, topic: topic, message: message,
                qos: qos, retain: retain
            )
        }
        let pushed = self.ring.push(
            UnsafeRawBufferPointer(rebasing: entry[0..<SpoolWriter.entryHeaderSize]), UnsafeRawBufferPointer(frame)
        )
        guard pushed else { return self.drop(.ringFull) }
        self.writer.notify()

        // Bookkeeping, now that the record is on its way.
        self.nextSequence += 1
        self.pendingRoll = false
        self.ledgerDirty = true  // its nextSequence moved; written with the next acknowledgement or at close
        if newSegment {
            self.segments.append(SpoolSegmentInfo(
                number: segmentNumber, firstSequence: sequence, endSequence: sequence, bytes: 0, unacknowledged: 0,
                firstTimestamp: nil
            ))
        }
        let last = self.segments.count - 1
        if self.segments[last].firstTimestamp == nil { self.segments[last].firstTimestamp = time }
        self.segments[last].endSequence = sequence + 1
        self.segments[last].bytes += frameSize
        self.segments[last].unacknowledged += 1
        self.state.bytes += frameSize
        self.state.appended &+= 1
        self.unacknowledgedCount += 1
        self.pendingPerKey[Int(key.index)] += 1
        while self.slots.end < sequence { self.slots.append(.init(state: .absent, key: 0)) }
        if inFlight {
            self.slots.append(.init(state: .inFlight, key: key.index))
        } else {
            self.slots.append(.init(state: .pending, key: key.index))
            self.pendingCount += 1
            self.replayPendingPerKey[Int(key.index)] += 1
        }
        return .appended(id: sequence)
    }

    /// ``append(key:topic:message:qos:retain:timestamp:inFlight:)`` for arrays and strings (tests, tools).
    @discardableResult
    public func append(
        key: SpoolStreamKey, topic: String, message: [UInt8], qos: UInt8 = 1, retain: Bool = false,
        timestamp: Int64? = nil, inFlight: Bool = false
    ) -> SpoolAppendResult {
        let topicBytes = Array(topic.utf8)
        return topicBytes.withUnsafeBytes { topicRaw in
            message.withUnsafeBytes { messageRaw in
                self.append(
                    key: key, topic: topicRaw, message: messageRaw, qos: qos, retain: retain, timestamp: timestamp,
                    inFlight: inFlight
                )
            }
        }
    }

    func drop(_ reason: SpoolDropReason) -> SpoolAppendResult {
        self.state.countDrop(reason)
        return .dropped(reason)
    }

    /// Deletes the oldest segment to make room, counting its unacknowledged records as dropped. The active
    /// segment is rolled first when it is the only one.
    ///
    /// - Returns: false when there is nothing to evict (the spool is empty).
    func evictOldestSegment() -> Bool {
        if self.segments.count == 1 {
            guard let active = self.segments.first, active.bytes > 0 else { return false }
            // Start a fresh active segment through the ring's next entry: mark it here, the next append rolls.
            self.segments.append(SpoolSegmentInfo(
                number: active.number + 1, firstSequence: self.nextSequence, endSequence: self.nextSequence,
                bytes: 0, unacknowledged: 0, firstTimestamp: nil
            ))
            self.pendingRoll = true
        }
        let oldest = self.segments.removeFirst()
        var dropped = 0
        var sequence = oldest.firstSequence
        while sequence < oldest.endSequence {
            if let slot = self.slots[sequence], slot.state == .pending || slot.state == .inFlight {
                self.forget(sequence, slot: slot)
                dropped += 1
            }
            sequence += 1
        }
        self.state.countDrop(.fullOldest, dropped)
        self.state.bytes -= oldest.bytes
        self.writer.post { $0.deleteSegments.append(oldest.number) }
        self.trimSlots()
        self.ledgerDirty = true
        return true
    }

    /// Marks an unacknowledged record gone: counters, per-key and per-segment counts.
    func forget(_ sequence: UInt64, slot: SpoolSlotTable.Slot) {
        if slot.state == .pending {
            self.pendingCount -= 1
            if Int(slot.key) < self.replayPendingPerKey.count { self.replayPendingPerKey[Int(slot.key)] -= 1 }
        }
        self.unacknowledgedCount -= 1
        if Int(slot.key) < self.pendingPerKey.count { self.pendingPerKey[Int(slot.key)] -= 1 }
        self.slots.setState(.absent, of: sequence)
        if let index = self.segmentIndex(containing: sequence) { self.segments[index].unacknowledged -= 1 }
        if sequence == self.lowWatermark { self.advanceLowWatermark() }
    }

    /// The index in ``segments`` of the segment holding `sequence`.
    func segmentIndex(containing sequence: UInt64) -> Int? {
        var low = 0
        var high = self.segments.count
        while low < high {
            let middle = (low + high) / 2
            if self.segments[middle].endSequence <= sequence { low = middle + 1 } else { high = middle }
        }
        guard low < self.segments.count, self.segments[low].firstSequence <= sequence else { return nil }
        return low
    }

    /// Drops slots below the oldest segment.
    func trimSlots() {
        let first = self.segments.first?.firstSequence ?? self.nextSequence
        self.slots.removeBelow(first)
        if self.lowWatermark < first { self.advanceLowWatermark() }
        if self.replayNext < first { self.replayNext = first }
    }

    static func realtimeMicroseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
    }
}
