import Testing

@testable import Config

/// `bluetooth.adapter`: one adapter name, or a list of them for a board with several radios (SPEC §18).
@Suite struct AdapterListConfigTests {
    let environment = ConfigEnvironment(hostname: "pi-ward-3", configDirectory: "/etc/empalink")

    func validate(_ text: String) throws -> AgentConfiguration {
        let document = try TOMLParser.parse(Array(text.utf8))
        return try ConfigValidator.validate(document, environment: self.environment)
    }

    func errors(_ text: String) throws -> [String] {
        let document = try TOMLParser.parse(Array(text.utf8))
        do {
            _ = try ConfigValidator.validate(document, environment: self.environment)
            return []
        } catch {
            return error.diagnostics.map(\.message)
        }
    }

    @Test(arguments: [
        ("", ["hci0"]),
        ("[bluetooth]\nadapter = \"hci1\"\n", ["hci1"]),
        ("[bluetooth]\nadapter = [\"hci0\"]\n", ["hci0"]),
        ("[bluetooth]\nadapter = [\"hci1\", \"hci0\", \"hci12\"]\n", ["hci1", "hci0", "hci12"]),
    ])
    func oneNameOrAListInTheGivenOrder(text: String, adapters: [String]) throws {
        let config = try self.validate(text)
        #expect(config.bluetooth.adapters == adapters)
        #expect(config.bluetooth.adapter == adapters[0])
    }

    @Test(arguments: [
        ("[bluetooth]\nadapter = []\n", "bluetooth.adapter: expected 1 … 8 adapters, found 0"),
        ("[bluetooth]\nadapter = [\"hci0\", \"hci0\"]\n", "bluetooth.adapter: \"hci0\" is listed twice"),
        ("[bluetooth]\nadapter = [\"hci0\", \"usb0\"]\n",
         "bluetooth.adapter: \"usb0\" is not an adapter name; expected \"hci0\", \"hci1\", …"),
        ("[bluetooth]\nadapter = [\"hci0\", 1]\n",
         "bluetooth.adapter: an integer (1) is not an adapter name; expected \"hci0\", \"hci1\", …"),
        ("[bluetooth]\nadapter = \"hci\"\n",
         "bluetooth.adapter: \"hci\" is not an adapter name; expected \"hci0\", \"hci1\", …"),
        ("[bluetooth]\nadapter = 0\n",
         "bluetooth.adapter: expected an adapter name or an array of them, found an integer (0)"),
        ("[bluetooth]\nadapter = [\"hci0\", \"hci1\", \"hci2\", \"hci3\", \"hci4\", \"hci5\", \"hci6\", \"hci7\", \"hci8\"]\n",
         "bluetooth.adapter: expected 1 … 8 adapters, found 9"),
    ])
    func badListsAreOneLineErrors(text: String, message: String) throws {
        #expect(try self.errors(text) == [message])
    }
}
