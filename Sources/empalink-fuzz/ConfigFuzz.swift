import Config

/// The TOML parser and the configuration validator (SPEC §4): the input is a configuration file. A parse error and
/// every validation diagnostic are rendered, as the operator would see them.
enum ConfigFuzz {
    static let target = FuzzTarget(
        name: "config",
        summary: "a configuration file: TOMLParser.parse, then ConfigValidator.validate, errors rendered"
    ) { bytes in
        let document: TOMLTable
        do throws(TOMLError) {
            document = try TOMLParser.parse(Array(bytes))
        } catch {
            _ = error.description
            return
        }
        do throws(ConfigErrors) {
            let configuration = try ConfigValidator.validate(document, environment: environment)
            _ = configuration.json.serialized()
        } catch {
            for diagnostic in error.diagnostics { _ = diagnostic.formatted(path: "fuzz.toml") }
        }
    }

    static let environment = ConfigEnvironment(hostname: "fuzz-host", configDirectory: "/etc/empalink")
}
