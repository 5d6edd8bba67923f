#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Spool

/// The spool's append (SPEC §11) as the outbox calls it: a borrowed topic and message, on the loop thread, with
/// the writer thread running and draining the ring to a segment file. Default options (4 MiB segments, 1 s group
/// commit). The message is shaped like the agent's: a 200-byte JSON batch on `empalink/pi-01/9ff167/bvp`.
///
/// The loop does not run while counting (an append never waits for it); the writer's reports queue up for it
/// and are handled after the measurement, when ``Spool/synchronize()`` also proves every record was written.
enum SpoolChecks {
    static func run(iterations: Int) throws(CheckError) -> [AllocationMeasurement] {
        let scratch = try ScratchDirectory(prefix: "empalink-alloc-spool")
        let loop: EventLoop
        do {
            loop = try EventLoop()
        } catch {
            throw CheckError("event loop: \(error)")
        }
        defer { loop.close() }
        let spool: Spool
        do {
            spool = try Spool(options: SpoolOptions(directory: scratch.path + "/spool"), eventLoop: loop)
        } catch {
            throw CheckError("spool: \(error)")
        }
        defer { spool.close() }
        guard let key = spool.streamKey("9ff167/bvp") else { throw CheckError("spool: no stream key") }
        let topic = Array("empalink/pi-01/9ff167/bvp".utf8)
        var message = Array(#"{"sid":"3f2a9c01d4e5b6a7","seq":0,"t":1700000000.015625,"fs":64,"v":["#.utf8)
        while message.count < 198 { message += Array("12.345,".utf8) }
        message += Array("0]}".utf8)

        var appended = 0
        var dropped = 0
        let measurement = topic.withUnsafeBytes { topicBytes in
            message.withUnsafeBytes { messageBytes in
                var result = AllocationMeasurement.measure("spool.append", iterations: iterations, warmUp: 64) {
                    switch spool.append(key: key, topic: topicBytes, message: messageBytes, qos: 1) {
                    case .appended: appended += 1
                    case .dropped: dropped += 1
                    }
                }
                if dropped > 0 || appended != iterations + 64 {
                    result.failure = "\(appended) appended, \(dropped) dropped of \(iterations + 64)"
                }
                return result
            }
        }
        spool.synchronize()
        var checked = measurement
        let written = spool.writtenBelow
        if checked.failure == nil && written < UInt64(iterations + 64) {
            checked.failure = "the writer wrote \(written) of \(iterations + 64) records"
        }
        return [checked]
    }
}
