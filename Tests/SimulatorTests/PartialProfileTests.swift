#if canImport(Glibc)
import Glibc
#endif
import DBus
import Testing

@testable import Simulator

/// `[bluetoothd] omit_characteristics`: a wristband whose GATT profile lacks some characteristics, parsed from the
/// scenario and left out of the tree, its signals and its streams, on both faces of the simulator.
@Suite(.serialized) struct PartialProfileTests {
    static let characteristic = "org.bluez.GattCharacteristic1"

    // MARK: Parsing

    @Test func parsesTheNamesOfTheStreamsAndTheCommand() throws {
        let scenario = try Scenario.parse("""
            [bluetoothd]
            omit_characteristics = ["battery", "tag", "command"]
            """)
        #expect(scenario.bluetoothd.omittedCharacteristics == [0x3EB3, 0x3EB2, 0x3E71])
        let every = try Scenario.parse("""
            [bluetoothd]
            omit_characteristics = ["bvp", "acc", "temp", "gsr", "tag", "battery", "command"]
            """)
        #expect(every.bluetoothd.omittedCharacteristics == [0x3EA1, 0x3EA3, 0x3EA6, 0x3EA8, 0x3EB2, 0x3EB3, 0x3E71])
        #expect(try Scenario.parse("[bluetoothd]\nomit_characteristics = []\n").bluetoothd.omittedCharacteristics
            .isEmpty)
        #expect(Scenario().bluetoothd.omittedCharacteristics.isEmpty)
    }

    @Test(arguments: [
        ("[bluetoothd]\nomit_characteristics = [\"battery\", \"heart\"]\n", 2, 36,
         "unknown characteristic 'heart' in 'omit_characteristics' "
             + "(expected bvp, acc, temp, gsr, tag, battery, command)"),
        ("[bluetoothd]\nomit_characteristics = \"battery\"\n", 2, 24,
         "'omit_characteristics' must be an array of names, found string"),
        ("[bluetoothd]\n\nomit_characteristics = [3]\n", 3, 25,
         "'omit_characteristics' must be a string, found integer"),
        ("[bluetoothd]\nomit_characteristics = [\"BVP\"]\n", 2, 25, "unknown characteristic 'BVP'"),
    ])
    func rejectsAnUnknownNameWithItsPosition(text: String, line: Int, column: Int, message: String) {
        #expect {
            _ = try Scenario.parse(text)
        } throws: { error in
            guard let error = error as? ScenarioError else { return false }
            return error.position.line == line && error.position.column == column && error.message.contains(message)
                && !error.description.contains("\n")
        }
    }

    // MARK: The simulated bluetoothd

    static func scenario(omitting names: [String]) -> Scenario {
        var scenario = SimulatorHarness.fastScenario()
        scenario.bluetoothd.omittedCharacteristics = Set(names.compactMap { name in
            BluetoothdBehaviour.characteristicNames.first { $0.name == name }?.uuid16
        })
        return scenario
    }

    /// The 16-bit UUIDs of the `GattCharacteristic1` objects under device 1, and the characteristics of its CCCDs.
    func exportedCharacteristics(_ h: SimulatorHarness) -> (characteristics: Set<String>, descriptors: Set<String>) {
        var characteristics: Set<String> = []
        var descriptors: Set<String> = []
        for (path, interfaces) in h.managedObjects() where path.hasPrefix(SimulatorHarness.device1 + "/") {
            if let uuid = interfaces[Self.characteristic]?["UUID"]?.string {
                characteristics.insert(String(uuid.prefix(8).suffix(4)))
            }
            if let owner = interfaces["org.bluez.GattDescriptor1"]?["Characteristic"]?.string {
                descriptors.insert(owner)
            }
        }
        return (characteristics, descriptors)
    }

    @Test func omittedCharacteristicsAreNotExportedAnnouncedOrStreamed() throws {
        let h = try SimulatorHarness(devices: 1, scenario: Self.scenario(omitting: ["battery", "tag"]))
        defer { h.close() }
        try h.discoverAndConnect()
        let (characteristics, descriptors) = self.exportedCharacteristics(h)
        #expect(characteristics == ["3ea1", "3ea3", "3ea6", "3ea8", "3e71"])
        #expect(descriptors == Set([0x3EA1, 0x3EA3, 0x3EA6, 0x3EA8].map { h.charPath($0) }))
        // The services stay; the remaining characteristics keep their paths.
        let objects = h.managedObjects()
        #expect(objects[SimulatorHarness.device1 + "/service0019"]?["org.bluez.GattService1"] != nil)
        #expect(objects[h.charPath(0x3EA1)]?[Self.characteristic] != nil)
        #expect(objects[h.charPath(0x3EB3)] == nil)
        #expect(objects[h.charPath(0x3EB2)] == nil)
        // Nor were they announced.
        let announced = h.signals.filter { $0.member == "InterfacesAdded" }.compactMap { $0.arguments.first?.string }
        #expect(announced.contains(h.charPath(0x3EA1)))
        #expect(!announced.contains { $0.hasPrefix(h.charPath(0x3EB3)) || $0.hasPrefix(h.charPath(0x3EB2)) })
        // A call on an omitted path finds no object.
        #expect(h.errorName(h.call(h.charPath(0x3EB3), Self.characteristic, "ReadValue", [.properties([])])) != nil)

        // The rest streams; the omitted streams send nothing and record no truth, even with a tag pressed.
        guard let reader = try h.acquireNotify(0x3EA1) else { return }
        defer { reader.close() }
        #expect(h.errorName(h.writeStart()) == nil)
        #expect(h.wait { reader.packets.count >= 4 })
        #expect(h.errorName(h.control("PressTag", [.string("a00101")])) == nil)
        h.run(for: 0.3)
        #expect(!h.truthRows("bvp.csv").isEmpty)
        #expect(h.truthRows("battery.csv").isEmpty)
        #expect(h.truthRows("tags.csv").isEmpty)
        let device = h.stats()["devices"]?.stringKeyed?["a00101"]?.stringKeyed
        #expect(device?["streaming"]?.unwrapped == .boolean(true), "\(String(describing: device))")
    }

    @Test func withoutTheCommandCharacteristicNothingStarts() throws {
        let h = try SimulatorHarness(devices: 1, scenario: Self.scenario(omitting: ["command"]))
        defer { h.close() }
        try h.discoverAndConnect()
        let (characteristics, _) = self.exportedCharacteristics(h)
        #expect(characteristics == ["3ea1", "3ea3", "3ea6", "3ea8", "3eb2", "3eb3"])
        #expect(h.errorName(h.writeStart()) != nil)
        h.run(for: 0.2)
        #expect(h.simulator.devices[0].session == nil)
        #expect(h.simulator.devices[0].sessions == 0)
    }

    @Test func theWholeProfileByDefault() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        try h.discoverAndConnect()
        #expect(self.exportedCharacteristics(h).characteristics
            == ["3ea1", "3ea3", "3ea6", "3ea8", "3eb2", "3eb3", "3e71"])
    }

    // MARK: The peripheral face

    @Test func thePeripheralRegistersThePartialProfile() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        try h.bluetoothd.start()
        var scenario = Scenario()
        scenario.timing.tickMilliseconds = 20
        scenario.bluetoothd.omittedCharacteristics = [0x3EB3, 0x3EA8]
        let peripheral = PeripheralSimulator(busAddress: h.bus.address, adapter: "hci0", seed: 7, scenario: scenario,
                                             truthDirectory: h.truthDirectory, adapterTimeout: .seconds(10),
                                             callTimeout: .seconds(5), loop: h.loop, logger: .discarding)
        try peripheral.start()
        h.peripheral = peripheral
        #expect(h.wait { peripheral.registration == .registered })
        let uuids = Set(h.bluetoothd.applicationTree.values.compactMap { $0[Self.characteristic]?["UUID"]?.string })
        #expect(uuids == Set([0x3EA1, 0x3EA3, 0x3EA6, 0x3EB2, 0x3E71].map { SimulatedCharacteristic.uuid128($0) }))
    }
}
