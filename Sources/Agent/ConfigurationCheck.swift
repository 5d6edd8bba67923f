#if canImport(Glibc)
import Glibc
#endif
import Config
import EmpaLink
import MQTT
import Posix

/// What a valid configuration still needs from the machine, checked without Bluetooth or a broker: the files it
/// names (API key, keyring, MQTT password, TLS certificates) and whether it can connect anything at all.
///
/// `empalinkd --check-config`, the start and every reload (SIGHUP) run the same checks, so what `--check-config`
/// passes does not then fail at start, and a failure at start is a configuration error (exit 2, which the unit's
/// `RestartPreventExitStatus=2` does not restart into a loop).
///
/// Errors stop the agent: a named file that cannot be read, a keyring that does not parse, an API key the keyring
/// refuses. Warnings leave it running: no API key, no wristband whitelisted, or a whitelisted wristband the key
/// does not unlock. A configuration that connects nothing is legitimate (an agent installed before its
/// wristbands are assigned), but the operator should hear that nothing will happen.
enum ConfigurationCheck {
    /// Runs every offline check.
    ///
    /// - Parameters:
    ///   - today: the day API key expiry is judged on.
    /// - Returns: errors and warnings, errors first, each at the key it is about when the file names it.
    static func run(_ configuration: AgentConfiguration, today: CalendarDay = .today) -> [ConfigDiagnostic] {
        var errors: [ConfigDiagnostic] = []
        var warnings: [ConfigDiagnostic] = []
        func fail(_ message: String, key: String) {
            errors.append(ConfigDiagnostic(message, at: configuration.position(of: key)))
        }
        func warning(_ message: String, key: String?) {
            warnings.append(ConfigDiagnostic(message, at: key.flatMap(configuration.position(of:)),
                                             severity: .warning))
        }
        let auth = configuration.auth
        var apiKey: String?
        do {
            apiKey = try APIKey.load(auth)
        } catch {
            fail("auth.api_key_file: \(error.message)", key: "auth.api_key_file")
        }
        if apiKey == nil, auth.apiKeyFile == nil {
            warning("no API key (auth.api_key_file): no wristband will be connected", key: nil)
        }
        if configuration.wristbands.isEmpty {
            warning("no [[wristband]] is whitelisted: no wristband will be connected", key: nil)
        }
        if let apiKey {
            switch Self.keyring(at: auth.keyring) {
            case .failure(let message):
                fail("auth.keyring: \(message)", key: "auth.keyring")
            case .success(let keyring):
                switch keyring.authenticate(apiKey: apiKey, today: today) {
                case .failure(let refusal):
                    fail("auth: \(refusal) (keyring \(auth.keyring); `empalinkctl key add` issues a key)",
                          key: auth.apiKey != nil ? "auth.api_key" : "auth.api_key_file")
                case .success(let grant):
                    for band in configuration.wristbands where band.profile != "hrs" && !grant.allows(serial: band.serial) {
                        warning("wristband \(band.serial) is whitelisted but the API key does not unlock it",
                                key: nil)
                    }
                }
            }
        }
        do {
            _ = try MQTTClient.Options(configuration.mqtt, agentID: configuration.agent.id)
        } catch {
            fail(error.message, key: "mqtt.password_file")
        }
        let tls = configuration.mqtt.tls
        for (key, path) in [("mqtt.tls.ca_file", tls.caFile), ("mqtt.tls.cert_file", tls.certFile),
                            ("mqtt.tls.key_file", tls.keyFile)] {
            guard let path else { continue }
            if let reason = Self.unreadable(path) { fail("\(key) \(path): cannot read: \(reason)", key: key) }
        }
        if let path = tls.caPath, !FileSystem.isDirectory(path) {
            fail("mqtt.tls.ca_path \(path): not a directory (or cannot be reached)", key: "mqtt.tls.ca_path")
        }
        return errors + warnings
    }

    /// Reads and parses the keyring at `path`.
    ///
    /// - Returns: the keyring, or a one-line reason naming the file.
    static func keyring(at path: String) -> Result<Keyring, KeyringProblem> {
        let bytes: [UInt8]
        do {
            bytes = try readFile(atPath: path, limit: 4 << 20)
        } catch {
            return .failure(KeyringProblem("\(path): cannot read the keyring: \(error)"))
        }
        do {
            return .success(try Keyring.parse(bytes))
        } catch {
            let first = error.diagnostics.first.map { $0.formatted(path: path) } ?? path
            return .failure(KeyringProblem("invalid keyring: \(first)"))
        }
    }

    struct KeyringProblem: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Why `path` cannot be read as a file, or `nil` when it can.
    static func unreadable(_ path: String) -> String? {
        do {
            _ = try readFile(atPath: path, limit: 16 << 20)
            return nil
        } catch {
            return error.rawValue == EFBIG ? "larger than 16 MiB" : error.description
        }
    }
}
