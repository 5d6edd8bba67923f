import EventLoop
import Testing
import TestSupport

import EmpaLink

/// The public way in (SPEC §7): the API opens its own bus connection from ``EmpaticaAPI/Options/busAddress`` — no
/// D-Bus type crosses its surface — reports losing it, and closes it. Plain `import EmpaLink`: only public API here.
@Suite(.serialized) struct EmpaticaAPIBusTests {
    /// Runs `loop` until `condition` holds (checked every 50 ms) or `limit` passes.
    static func run(_ loop: EventLoop, until condition: @escaping () -> Bool, limit: Duration = .seconds(10)) throws
        -> Bool
    {
        var met = condition()
        if met { return true }
        let poll = try loop.scheduleTimer(after: .milliseconds(50), repeating: .milliseconds(50)) {
            if condition() {
                met = true
                loop.stop()
            }
        }
        let guardTimer = try loop.scheduleTimer(after: limit) { loop.stop() }
        loop.run()
        loop.cancel(poll)
        loop.cancel(guardTimer)
        return met
    }

    @Test func opensItsOwnBusReportsItsLossAndClosesWithoutAlarm() throws {
        let bus = try TestBus()
        let sim = try SimProcess(bus: bus, devices: 1)
        defer { sim.stop() }
        let loop = try EventLoop()
        defer { loop.close() }
        var options = EmpaticaAPI.Options()
        options.busAddress = bus.address

        let closed = try EmpaticaAPI(loop: loop, options: options)
        var closedLost = false
        closed.onBusLost = { closedLost = true }
        #expect(try Self.run(loop, until: { closed.status != .notAvailable }), "BlueZ (the simulator) is seen")
        closed.close()
        #expect(!closedLost, "closing is not losing the bus")

        let api = try EmpaticaAPI(loop: loop, options: options)
        var lost = false
        api.onBusLost = { lost = true }
        #expect(try Self.run(loop, until: { api.status != .notAvailable }))
        bus.stop()
        #expect(try Self.run(loop, until: { lost }), "the dbus-daemon went away")
        api.close()
    }

    @Test func anUnreachableBusIsOneClearError() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        var options = EmpaticaAPI.Options()
        options.busAddress = "unix:path=/nonexistent/empalink-test-bus"
        do {
            _ = try EmpaticaAPI(loop: loop, options: options)
            Issue.record("an API on a bus that is not there")
        } catch {
            guard case .bluetoothUnavailable(let reason) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(reason.hasPrefix("cannot reach the system bus at unix:path=/nonexistent/empalink-test-bus: "))
        }
    }
}
