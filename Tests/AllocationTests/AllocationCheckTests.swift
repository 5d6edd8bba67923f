import Testing

/// Allocations per notification in steady state (SPEC §8): runs `empalink-alloc-check` as a child process and
/// holds every case to its budget.
///
/// The counter overrides `malloc` for the whole process it is linked into, so it lives in its own executable
/// and this suite only reads its report: no other suite's allocator changes, and the typed-throw error paths are
/// measured without Swift Testing's throw hooks (which allocate on every throw). The budgets themselves live in
/// the executable (`Budget`), per build configuration, so `make alloc-check` and this suite agree.
@Suite struct AllocationCheckTests {
    /// The notification path, end to end as far as it exists, plus the codecs: 0 allocations in a release build.
    static let steadyState: Set<String> = [
        "e4.bvp.decode", "e4.bvp.decode.span", "e4.bvp.error.wrongLength", "e4.bvp.error.duplicate",
        "e4.acc.decode", "e4.acc.error.wrongLength", "e4.acc.error.duplicate",
        "e4.gsr.decode", "e4.gsr.error.wrongLength", "e4.gsr.error.duplicate",
        "e4.temp.decode", "e4.temp.error.wrongLength", "e4.temp.error.invalidContent", "e4.temp.error.duplicate",
        "e4.battery.decode", "e4.battery.error.tooShort", "e4.battery.error.invalidContent",
        "e4.control.decode", "e4.control.error.tooShort", "e4.command.decode", "e4.command.error.invalidContent",
        "e4.bvp.encode", "e4.acc.encode", "e4.gsr.encode", "e4.temp.encode", "e4.events.encode",
        "device.receive.bvp+acc", "device.receive.gsr", "device.receive.temp", "device.receive.battery",
        "device.receive.tag", "device.receive.malformed", "device.receive.bvp+acc.motion", "profile.receive.bvp+acc",
        "physio.spectral.cadence-lobe",
        "notification.read.decode", "notification.drain.decode", "loop.timer.repeating", "spool.append",
        "agent.publish.spooled", "hrs.measurement.parse", "hrs.measurement.error.length", "profile.receive.hrs",
    ]
    /// The hot-path publish, on its own and as the agent hands a notification's batches to it (decode, batches,
    /// JSON, outbox, `mosquitto_publish`, PUBACK); `ours=` (the Swift side) is in the steady state, libmosquitto's
    /// copies are not.
    static let mqtt: Set<String> = [
        "mqtt.publish.v5.qos0", "mqtt.publish.v5.qos1", "mqtt.publish.v311.qos0", "mqtt.publish.v311.qos1",
        "agent.publish.connected", "agent.publish.flush", "agent.publish.deferred", "agent.publish.always",
        "agent.publish.hrs",
    ]
    /// Control-plane cases that allocate by design or by a known, reported cause.
    static let controlPlane: Set<String> = ["loop.wakeup.execute", "loop.timer.oneShot"]

    /// One run shared by the tests below: the check takes a few seconds and starts its own broker.
    static let shared = Result { try AllocationReport.run(arguments: ["--iterations", "500"]) }

    @Test func everyCaseStaysWithinItsAllocationBudget() throws {
        let report = try Self.shared.get()
        #expect(report.status == 0, "empalink-alloc-check failed:\n\(report.output)\n\(report.errors)")
        #expect(Set(report.cases.keys) == Self.steadyState.union(Self.mqtt).union(Self.controlPlane),
                "\(report.output)")
        for (name, result) in report.cases.sorted(by: { $0.key < $1.key }) {
            #expect(result.iterations > 0, "\(result.line)")
            #expect(result.counted <= result.limit, "\(name) over budget: \(result.line)")
            #expect(result.passed, "\(result.line)")
            if report.configuration == "release" && (Self.steadyState.contains(name) || Self.mqtt.contains(name)) {
                #expect(result.counted == 0, "\(name) allocates in the release steady state: \(result.line)")
            }
        }
    }

    @Test func decodersAndTheLiveDecodePathAllocateNothingInAnyBuild() throws {
        // The codecs, `DeviceStreams` and the profile seam over it are allocation-free even unoptimised: no
        // budget, debug or release.
        let report = try Self.shared.get()
        let pure = Self.steadyState.filter { name in
            ["e4.", "device.", "profile."].contains { name.hasPrefix($0) }
        }
        for name in pure.sorted() {
            let result = try #require(report.cases[name], "missing case \(name): \(report.output)")
            #expect(result.allocations == 0, "\(name) allocated: \(result.line)")
        }
    }

    @Test func theSpoolPathAllocatesNothingInAnyBuild() throws {
        // Spool append on the loop thread (writer thread running), alone and as the agent's outbox reaches it
        // when the broker has gone away: no budget, debug or release.
        let report = try Self.shared.get()
        for name in ["spool.append", "agent.publish.spooled"] {
            let result = try #require(report.cases[name], "missing case \(name): \(report.output)\n\(report.errors)")
            #expect(result.iterations > 0, "\(result.line)")
            #expect(result.allocations == 0, "\(name) allocated: \(result.line)")
            #expect(result.passed, "\(result.line)")
        }
    }

    @Test func libmosquittoCopiesAreReportedApartFromOurs() throws {
        let report = try Self.shared.get()
        for name in Self.mqtt.sorted() {
            let result = try #require(report.cases[name], "missing case \(name): \(report.output)\n\(report.errors)")
            let library = try #require(result.fields["libmosquitto"].flatMap { UInt64($0) }, "\(result.line)")
            // libmosquitto copies every message (at least its struct and payload): 0 would mean the attribution
            // (or the counter) is broken, not that the library got leaner.
            #expect(library >= 2 * result.iterations, "\(result.line)")
            #expect(result.counted + library == result.allocations, "\(result.line)")
        }
    }

    @Test func theCounterSeesAnAllocationWhenThereIsOne() throws {
        // Scheduling a one-shot timer allocates its record every time: a counter that counted nothing (the
        // override not linked, the flag never set) would report 0 here. Also the tool's own options.
        let report = try AllocationReport.run(arguments: ["--iterations", "50", "--no-mqtt"])
        let result = try #require(report.cases["loop.timer.oneShot"], "\(report.output)\n\(report.errors)")
        #expect(result.iterations == 50)
        #expect(result.allocations >= result.iterations)
        #expect(result.fields["frees"].flatMap { UInt64($0) } ?? 0 >= result.iterations)
        #expect(report.cases["mqtt.publish.v5.qos1"] == nil)
        #expect(report.cases["agent.publish.connected"] == nil)
        #expect(report.cases["agent.publish.always"] == nil)
        #expect(report.cases["spool.append"]?.passed == true)
        #expect(report.status == 0)
    }
}
