import DBus
import E4

/// The `LEAdvertisement1` object registered with `LEAdvertisingManager1`.
///
/// It must fit legacy advertising (31 bytes of advertising data, 31 of scan response), which is what a Pi's
/// adapter and `btvirt` do. bluetoothd 5.66 puts `LocalName` in the scan response (`advertising.c`,
/// `generate_scan_rsp`), so the advertising data holds flags (3 bytes, from `Discoverable`), the 128-bit 3EA0
/// service UUID (18) and the manufacturer data the central face also sends (7): 28 bytes. The scan response holds
/// the name "Empatica E4" (13), which an actively scanning central (BlueZ's LE discovery is active) merges into
/// `Device1.Name`, the property the agent matches on.
extension PeripheralSimulator {
    /// The advertisement's properties for `device`.
    static func advertisementProperties(_ device: SimulatedDevice) -> [(String, DBusProperty)] {
        [
            ("Type", DBusProperty(.string("peripheral"))),
            // A strap advertises its Heart Rate and Battery services as 16-bit UUIDs (6 bytes).
            ("ServiceUUIDs", DBusProperty(.strings(device.kind == .e4 ? [SimulatedCharacteristic.uuid128(0x3EA0)]
                : device.advertisedServices.map(SimulatedCharacteristic.hex4)))),
            ("ManufacturerData", DBusProperty(.dictionary(key: "q", value: "v", [
                .init(.uint16(0xFFFF), .variant(.bytes(device.manufacturerPayload))),
            ]))),
            ("LocalName", DBusProperty(.string(device.name))),
            // General-discoverable flags: bluetoothd's discovery skips LE advertisements without them.
            ("Discoverable", DBusProperty(.boolean(true))),
        ]
    }

    func exportAdvertisement(_ device: SimulatedDevice) throws(DBusError) {
        guard let connection = self.connection else { throw DBusError(name: DBusError.disconnectedName, message: "") }
        try connection.objects.export(PeripheralSimulator.advertisementPath, interfaces: [
            DBusInterface(name: PeripheralSimulator.advertisementInterface,
                          properties: PeripheralSimulator.advertisementProperties(device),
                          methods: [
                              DBusMethod("Release") { [weak self] call in
                                  call.reply()
                                  self?.advertisementReleased()
                              },
                          ]),
        ])
    }

    /// bluetoothd dropped the advertisement (its adapter went away, or it is exiting); the adapter and name
    /// watches register it again when they come back.
    func advertisementReleased() {
        guard self.advertisementRegistered else { return }
        self.advertisementRegistered = false
        self.logger.info("bluetoothd released the advertisement on \(self.adapterName)")
    }
}
