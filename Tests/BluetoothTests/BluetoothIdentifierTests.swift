import Bluetooth
import Testing
import TestSupport

@Suite struct BluetoothUUIDTests {
    @Test func shortFormEqualsBlueZExpansion() throws {
        let blueZ = try #require(BluetoothUUID("00003ea1-0000-1000-8000-00805f9b34fb"))
        #expect(blueZ == .bit16(0x3EA1))
        #expect(Set([blueZ, .bit16(0x3EA1), .bit32(0x3EA1)]).count == 1)
        #expect(BluetoothUUID("00003EA1-0000-1000-8000-00805F9B34FB") == .bit16(0x3EA1))
        #expect(BluetoothUUID("00003ea100001000800000805f9b34fb") == .bit16(0x3EA1))
        #expect(BluetoothUUID("3ea1") == .bit16(0x3EA1))
        #expect(BluetoothUUID("00003EA1") == .bit16(0x3EA1))
        #expect(blueZ.uuid16 == 0x3EA1)
    }

    @Test func formatsLikeBlueZ() {
        #expect(BluetoothUUID.bit16(0x3EA1).description == "00003ea1-0000-1000-8000-00805f9b34fb")
        #expect(BluetoothUUID.bit32(0x1234_5678).description == "12345678-0000-1000-8000-00805f9b34fb")
        let custom = BluetoothUUID.bit128(0x0123_4567_89AB_CDEF_0011_2233_4455_6677)
        #expect(custom.description == "01234567-89ab-cdef-0011-223344556677")
        #expect(BluetoothUUID(custom.description) == custom)
        #expect(custom.uuid16 == nil)
        #expect(custom.shortest == custom)
        #expect(BluetoothUUID.bit32(0x1_0000).shortest == .bit32(0x1_0000))
        if case .bit32 = BluetoothUUID.bit32(0x1_0000).shortest {} else { Issue.record("expected bit32") }
    }

    @Test(arguments: [
        "", "3EA", "3EA1 ", " 3EA1", "zzzz", "0x3EA1", "3EA1x", "12345678-", "00003ea1-0000-1000-8000-00805f9b34f",
        "00003ea1x0000-1000-8000-00805f9b34fb", "00003ea1-0000-1000-8000-00805f9b34fbb",
        "0000-3ea10000-1000-8000-00805f9b34fb",
        "00003ea1-0000-1000-8000_00805f9b34fb", "ＡＢＣＤ", "3eä1", "00003ea1-0000-1000-8000-00805f9b34g0",
    ])
    func rejectsGarbage(text: String) {
        #expect(BluetoothUUID(text) == nil)
    }

    @Test func randomStringsNeverTrap() {
        var rng = SplitMix64(seed: 0x0B1D)
        let alphabet = Array("0123456789abcdefABCDEF-xg :é".unicodeScalars)
        var parsed = 0
        for _ in 0..<20_000 {
            let length = [4, 8, 32, 36, Int.random(in: 0...40, using: &rng)][Int.random(in: 0...4, using: &rng)]
            var text = ""
            for _ in 0..<length {
                text.unicodeScalars.append(alphabet[Int.random(in: 0..<alphabet.count, using: &rng)])
            }
            if let uuid = BluetoothUUID(text) {
                parsed += 1
                #expect(BluetoothUUID(uuid.description) == uuid)
            }
        }
        #expect(parsed > 0)
    }
}

@Suite struct BluetoothAddressTests {
    @Test func parsesFormatsAndDerivesSerial() throws {
        let address = try #require(BluetoothAddress("00:07:80:9f:F1:67"))
        #expect(address.description == "00:07:80:9F:F1:67")
        #expect(address.serial == "9ff167")
        #expect(address == BluetoothAddress(0x00, 0x07, 0x80, 0x9F, 0xF1, 0x67))
        #expect(address.rawValue == 0x0007_809F_F167)
        #expect(address[0] == 0x00 && address[3] == 0x9F && address[5] == 0x67 && address[6] == 0 && address[-1] == 0)
        #expect(BluetoothAddress("FF:FF:FF:FF:FF:FF")?.serial == "ffffff")
        #expect(BluetoothAddress(rawValue: .max).description == "FF:FF:FF:FF:FF:FF")
    }

    @Test(arguments: [
        "", "00:07:80:9F:F1", "00:07:80:9F:F1:6", "00:07:80:9F:F1:67:", "00:07:80:9F:F1:677", "00-07-80-9F-F1-67",
        "0007809FF167", "00:07:80:9G:F1:67", " 00:07:80:9F:F1:67", "00:07:80:9F:F1:6 ", "00:07:80:9F::F1:6",
        "ＡＡ:07:80:9F:F1:67", "00:07:80:9F:F1:é7",
    ])
    func rejectsGarbage(text: String) {
        #expect(BluetoothAddress(text) == nil)
    }

    @Test func roundTripsRandomAddresses() {
        var rng = SplitMix64(seed: 0xADD)
        for _ in 0..<5_000 {
            let address = BluetoothAddress(rawValue: rng.next())
            #expect(BluetoothAddress(address.description) == address)
            #expect(BluetoothAddress(address.description.lowercased()) == address)
            #expect(address.serial == String(address.description.suffix(8).filter { $0 != ":" }).lowercased())
        }
    }
}

@Suite struct BluetoothUUIDShortFormTests {
    @Test func shortDescriptionIsTheSpecificationsSpelling() throws {
        #expect(BluetoothUUID.bit16(0x2A37).shortDescription == "2A37")
        #expect(try #require(BluetoothUUID("0000180d-0000-1000-8000-00805f9b34fb")).shortDescription == "180D")
        #expect(BluetoothUUID.bit16(0x000F).shortDescription == "000F")
        #expect(BluetoothUUID.bit32(0x1234_5678).shortDescription == "12345678")
        let custom = BluetoothUUID.bit128(0x0123_4567_89AB_CDEF_0011_2233_4455_6677)
        #expect(custom.shortDescription == custom.description)
    }
}

@Suite struct BluetoothAddressTypeTests {
    @Test func parsesBlueZsSpellingsOnly() {
        #expect(BluetoothAddressType("public") == .public)
        #expect(BluetoothAddressType("random") == .random)
        for text in ["", "Public", "RANDOM", "public ", "rand", "publicrandom", "ｐublic"] {
            #expect(BluetoothAddressType(text) == nil, "\(text)")
        }
    }

    @Test func randomKindFollowsTheTopTwoBits() {
        #expect(BluetoothAddress(0xC0, 0, 0, 0, 0, 1).randomKind == .static)
        #expect(BluetoothAddress(0xFF, 0, 0, 0, 0, 1).randomKind == .static)
        #expect(BluetoothAddress(0x40, 0, 0, 0, 0, 1).randomKind == .resolvablePrivate)
        #expect(BluetoothAddress(0x3F, 0, 0, 0, 0, 1).randomKind == .nonResolvablePrivate)
        #expect(BluetoothAddress(0x80, 0, 0, 0, 0, 1).randomKind == .reserved)
    }
}
