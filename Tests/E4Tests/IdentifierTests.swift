import Bluetooth
import E4
import Testing

@Suite struct E4IdentifierTests {
    @Test func blueZsExpansionMapsToTheStream() throws {
        let blueZ = try #require(BluetoothUUID("00003ea1-0000-1000-8000-00805f9b34fb"))
        #expect(blueZ == E4Profile.bvpCharacteristic)
        #expect(E4Stream(characteristic: blueZ) == .bvp)
    }

    @Test func profileStreamsMapToTheirCharacteristics() {
        #expect(E4Stream.bvp.characteristic == .bit16(0x3EA1))
        #expect(E4Stream.acc.characteristic == .bit16(0x3EA3))
        #expect(E4Stream.temp.characteristic == .bit16(0x3EA6))
        #expect(E4Stream.gsr.characteristic == .bit16(0x3EA8))
        #expect(E4Stream.tag.characteristic == .bit16(0x3EB2))
        #expect(E4Stream.battery.characteristic == .bit16(0x3EB3))
        #expect([E4Stream.bvp, .gsr, .acc, .temp].map(\.sampleRate) == [64, 4, 32, 4])
        for stream in E4Stream.allCases { #expect(E4Stream(characteristic: stream.characteristic) == stream) }
        #expect(E4Stream(characteristic: E4Profile.commandCharacteristic) == nil)
        #expect(E4Profile.isE4FamilyName("Empatica E4") && E4Profile.isE4FamilyName("Empatica E3"))
        #expect(!E4Profile.isE4FamilyName("Empatica E4 ") && !E4Profile.isE4FamilyName("empatica e4"))
    }
}
