import Config
import Testing

@testable import EmpaLink

@Suite struct KeyringTests {
    static let today = CalendarDay(year: 2026, month: 11, day: 29)

    func keyring(_ text: String) throws -> Keyring {
        try Keyring.parse(Array(text.utf8))
    }

    @Test func sha256MatchesTheStandardVector() {
        // FIPS 180-2 example: SHA-256("abc").
        #expect(Keyring.sha256(Array("abc".utf8)).map(Keyring.hex)
                    == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func aKeyUnlocksExactlyItsDevices() throws {
        let text = (Keyring.entryText(apiKey: "ward-3-key", devices: ["9FF167", "a00102"]) ?? "")
            + (Keyring.entryText(apiKey: "site-key", devices: nil, expires: CalendarDay(year: 2027, month: 1, day: 1)) ?? "")
        let ring = try self.keyring(text)
        #expect(ring.entries.count == 2)
        guard case .success(let ward) = ring.authenticate(apiKey: "ward-3-key", today: Self.today) else {
            Issue.record("ward key refused")
            return
        }
        #expect(ward.allows(serial: "9ff167") && ward.allows(serial: "A00102"))
        #expect(!ward.allows(serial: "a00103"))
        guard case .success(let site) = ring.authenticate(apiKey: "site-key", today: Self.today) else {
            Issue.record("site key refused")
            return
        }
        #expect(site.allows(serial: "a00103"))
        #expect(ring.authenticate(apiKey: "ward-3-kez", today: Self.today) == .failure(.unknownKey))
        #expect(ring.authenticate(apiKey: "", today: Self.today) == .failure(.unknownKey))
    }

    @Test func expiryIsInclusiveOfTheLastDay() throws {
        let ring = try self.keyring(Keyring.entryText(apiKey: "k", devices: nil,
                                                      expires: CalendarDay(year: 2026, month: 11, day: 29)) ?? "")
        #expect((try? ring.authenticate(apiKey: "k", today: Self.today).get()) != nil)
        #expect(ring.authenticate(apiKey: "k", today: CalendarDay(year: 2026, month: 11, day: 30))
                    == .failure(.expired(CalendarDay(year: 2026, month: 11, day: 29))))
    }

    @Test(arguments: [
        ("[[key]]\nsha256 = \"abc\"\ndevices = [\"*\"]\n", "key.sha256: expected 64 hex digits"),
        ("[[key]]\ndevices = [\"*\"]\n", "[[key]] needs sha256"),
        ("[[key]]\nsha256 = \"\(String(repeating: "a", count: 64))\"\n", "[[key]] needs devices"),
        ("[[key]]\nsha256 = \"\(String(repeating: "a", count: 64))\"\ndevices = [\"9ff16\"]\n", "is not a serial"),
        ("[[key]]\nsha256 = \"\(String(repeating: "a", count: 64))\"\ndevices = [\"*\"]\nexpires = \"2026-02-30\"\n",
         "expected a date"),
        ("[[key]]\nsha256 = \"\(String(repeating: "a", count: 64))\"\ndevices = [\"*\"]\nowner = \"x\"\n",
         "unknown key \"owner\""),
        ("keys = 1\n", "unknown key \"keys\""),
        ("[[key]\n", "]]"),
    ])
    func malformedKeyringsAreClearErrors(text: String, fragment: String) {
        do {
            _ = try self.keyring(text)
            Issue.record("accepted: \(text)")
        } catch let error as ConfigErrors {
            #expect(!error.diagnostics.isEmpty)
            #expect(error.diagnostics.allSatisfy { $0.position != nil })
            #expect(error.diagnostics.contains { $0.message.contains(fragment) }, "\(error.diagnostics)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func calendarDaysParseStrictly() {
        #expect(CalendarDay("2028-02-29") == CalendarDay(year: 2028, month: 2, day: 29))
        #expect(CalendarDay("2027-02-29") == nil)
        #expect(CalendarDay("2027-13-01") == nil)
        #expect(CalendarDay("27-01-01") == nil)
        #expect(CalendarDay("2027-1-01") == nil)
        #expect(CalendarDay("２０２７-01-01") == nil)
        #expect(CalendarDay(year: 7, month: 3, day: 4).description == "0007-03-04")
    }
}
