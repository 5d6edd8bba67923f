import EmpaLink

/// The heart-rate profile's decode path (SPEC §16): the pure Heart Rate Measurement parser over a full notification
/// (flags, 16-bit HR, energy, RR intervals), its errors, and the profile's decoder through the seam (`any
/// ProfileDecoder`, generic over the sink) with HR, RR intervals, contact changes, a lost notification and battery.
/// Every one must allocate nothing.
enum HeartRateChecks {
    /// Flags 0x1F (16-bit HR, contact detected, energy, RR), 72 bpm, 1 kJ, seven RR values: a 19-byte value.
    static let full: [UInt8] = [0x1F, 72, 0, 1, 0] + (0..<7).flatMap { _ in [0x20, 0x03] }
    /// Flags 0x10 with half an RR interval: a wrong length.
    static let odd: [UInt8] = [0x10, 60, 0x00]

    static func run(iterations: Int) -> [AllocationMeasurement] {
        var results: [AllocationMeasurement] = []
        var sum = 0
        results.append(Self.full.withUnsafeBytes { raw in
            AllocationMeasurement.measure("hrs.measurement.parse", iterations: iterations) {
                do throws(HeartRateMeasurementError) {
                    let value = try HeartRateMeasurement.parse(raw)
                    for index in 0..<value.rrCount { sum &+= Int(value.rrInterval(index, in: raw)) }
                } catch {
                    sum &-= 1
                }
            }
        })
        results.append(Self.odd.withUnsafeBytes { raw in
            AllocationMeasurement.measure("hrs.measurement.error.length", iterations: iterations) {
                do throws(HeartRateMeasurementError) {
                    sum &+= Int(try HeartRateMeasurement.parse(raw).heartRate)
                } catch {
                    sum &-= 1
                }
            }
        })
        _ = sum
        results.append(Self.seam(iterations: iterations))
        return results
    }

    /// One strap notification a second through the seam: beats every 0.8 s, contact lost for 3 s every 60 s, one
    /// notification in 40 lost, a battery reading every 30 s.
    static func seam(iterations: Int) -> AllocationMeasurement {
        let profile: any DeviceProfile = HRSDeviceProfile()
        let decoder = profile.makeDecoder()
        let sink = CountingSink()
        var proxy = CountingSink.Proxy(owner: sink)
        var second = 0
        var packet = InlineArray<8, UInt8>(repeating: 0)
        let battery: InlineArray<1, UInt8> = [80]

        func send() {
            second += 1
            let arrival = DeviceStreamsChecks.start + Double(second) + 0.02
            let contact = second % 60 >= 3
            if second % 40 == 7 { return }  // lost over the air
            packet[0] = contact ? 0x16 : 0x04
            packet[1] = contact ? 75 : 0
            // 1 or 2 beats of 820/1024 s, alternately (1.25 beats a second on average).
            let beats = contact ? (second % 4 == 0 ? 2 : 1) : 0
            for index in 0..<beats {
                packet[2 + 2 * index] = 0x34
                packet[3 + 2 * index] = 0x03
            }
            if beats == 0 { packet[0] &= ~0x10 }
            let count = 2 + 2 * beats
            packet.span.withUnsafeBytes { raw in
                decoder.receive(channel: 0, UnsafeRawBufferPointer(rebasing: raw[0..<count]), arrival: arrival,
                                into: &proxy)
            }
            if second % 30 == 0 {
                battery.span.withUnsafeBytes { decoder.receive(channel: 1, $0, arrival: arrival, into: &proxy) }
            }
        }

        for _ in 0..<120 { send() }
        let before = sink.snapshot
        let lostBefore = decoder.statistics.lostPackets
        var measurement = AllocationMeasurement.measure("profile.receive.hrs", iterations: iterations, warmUp: 0) {
            send()
        }
        let during = sink.snapshot - before
        if during.heartRates == 0 || during.intervals == 0 || during.events == 0 {
            measurement.failure = "\(during.heartRates) HR, \(during.intervals) IBI, \(during.events) events: a path "
                + "was not exercised"
        } else if iterations >= 40 && decoder.statistics.lostPackets == lostBefore {
            measurement.failure = "no lost beats counted: the loss path was not exercised"
        }
        return measurement
    }
}
