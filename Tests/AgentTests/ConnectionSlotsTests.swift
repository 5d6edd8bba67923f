import Testing

@testable import Agent

/// Which adapter takes a wristband on a board with several (SPEC §18: spread by free slots, one attempt in flight
/// per adapter).
@Suite struct ConnectionSlotsTests {
    @Test func theAdapterWithMostFreeSlotsThatHeardItWins() {
        var slots = ConnectionSlots(adapters: ["hci0", "hci1"], capacity: 3)
        slots.take("hci0", attempting: false)
        #expect(slots.choose([("hci0", -50), ("hci1", -80)]) == "hci1", "more room beats a stronger signal")
        #expect(slots.choose([("hci0", -50)]) == "hci0", "only adapters that heard it")
        slots.take("hci1", attempting: false)
        #expect(slots.choose([("hci0", -70), ("hci1", -60)]) == "hci1", "equal room: the stronger signal")
        #expect(slots.choose([("hci0", -60), ("hci1", -60)]) == "hci0", "then the configured order")
        #expect(slots.choose([("hci0", nil), ("hci1", -90)]) == "hci1", "an RSSI beats none")
    }

    @Test func oneAttemptInFlightPerAdapterWhenThereAreSeveral() {
        var slots = ConnectionSlots(adapters: ["hci0", "hci1"], capacity: 5)
        slots.take("hci0", attempting: true)
        #expect(slots.choose([("hci0", -40)]) == nil, "hci0 is busy connecting")
        #expect(slots.choose([("hci0", -40), ("hci1", -90)]) == "hci1")
        slots.take("hci1", attempting: true)
        #expect(slots.choose([("hci0", -40), ("hci1", -90)]) == nil)
        // One adapter: as before, attempts are not limited.
        var single = ConnectionSlots(adapters: ["hci0"], capacity: 5)
        single.take("hci0", attempting: true)
        #expect(single.choose([("hci0", -40)]) == "hci0")
    }

    @Test func aFullAdapterOrOneNotConfiguredTakesNothing() {
        var slots = ConnectionSlots(adapters: ["hci0", "hci1"], capacity: 1)
        slots.take("hci0", attempting: false)
        #expect(slots.free("hci0") == 0)
        #expect(slots.choose([("hci0", -40)]) == nil)
        #expect(slots.choose([("hci2", -40)]) == nil, "an adapter not in bluetooth.adapter")
        slots.take("hci1", attempting: false)
        #expect(slots.choose([("hci0", -40), ("hci1", -40)]) == nil)
    }
}
