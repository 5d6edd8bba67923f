import Testing

@testable import Config

/// Messages quote what the file says, but never a whole megabyte of it (issue 23, item 11).
@Suite struct ConfigMessageLengthTests {
    let environment = ConfigEnvironment(hostname: "pi", configDirectory: "/etc/empalink")
    static let huge = String(repeating: "k", count: 1 << 20)

    func diagnostics(_ text: String) throws -> [ConfigDiagnostic] {
        let document = try TOMLParser.parse(Array(text.utf8))
        do {
            _ = try ConfigValidator.validate(document, environment: self.environment)
            Issue.record("expected errors")
            return []
        } catch {
            return error.diagnostics
        }
    }

    @Test func unknownKeyOfAMegabyteIsCutShortInItsMessage() throws {
        let found = try self.diagnostics("[bluetooth]\n\(Self.huge) = 1\n")
        #expect(found.count == 1)
        let message = try #require(found.first).message
        #expect(message.utf8.count < 400, "the message echoes \(message.utf8.count) bytes")
        #expect(message.hasPrefix("unknown key \"kkkk"))
        #expect(message.contains("in [bluetooth]"))
    }

    @Test func unknownSectionOfAMegabyteIsCutShortInItsMessage() throws {
        let found = try self.diagnostics("[\(Self.huge)]\n")
        let message = try #require(found.first).message
        #expect(message.utf8.count < 300, "the message echoes \(message.utf8.count) bytes")
        #expect(message.hasPrefix("unknown section \"kkkk"))
    }

    @Test func shortKeysAreStillQuotedWhole() throws {
        let found = try self.diagnostics("[bluetooth]\nrssi_mn = -80\n")
        #expect(found.first?.message == "unknown key \"rssi_mn\" in [bluetooth]; did you mean \"rssi_min\"?")
    }

    @Test func hugeIntegerIsCutShortInItsMessage() {
        let digits = String(repeating: "9", count: 1 << 20)
        let error = TOMLTestSupport.error("[mqtt]\nport = \(digits)\n")
        let message = error?.message ?? ""
        #expect(message.hasPrefix("integer 9999"), "\(message.prefix(80))")
        #expect(message.hasSuffix("does not fit in 64 bits"))
        #expect(message.utf8.count < 200, "the message echoes \(message.utf8.count) bytes")
    }

    @Test func hugeDuplicateKeyIsCutShortInItsMessage() {
        let error = TOMLTestSupport.error("\(Self.huge) = 1\n\(Self.huge) = 2\n")
        let message = error?.message ?? ""
        #expect(message.hasPrefix("duplicate key"), "\(message.prefix(80))")
        #expect(message.utf8.count < 300, "the message echoes \(message.utf8.count) bytes")
    }
}
