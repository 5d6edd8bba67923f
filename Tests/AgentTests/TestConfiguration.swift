import Config
import Foundation

/// A validated configuration from TOML text, as `empalinkd` would load it.
func configuration(_ toml: String, directory: String = "/tmp") throws -> AgentConfiguration {
    let document = try TOMLParser.parse(Array(toml.utf8))
    return try ConfigValidator.validate(document, environment: ConfigEnvironment(hostname: "pi", configDirectory: directory))
}
