#if canImport(Glibc)
import Glibc
#endif
import Agent
import Bluetooth
import Config
import E4
import EmpaLink
import EventLoop
import Posix

/// `empalinkctl capture`: connects one wristband and records its raw notifications (SPEC §6.4), so a field
/// capture can check or correct the wire format (`empalinkctl decode` reads it back).
public enum CaptureCommand: CtlCommand {
    public static let name = "capture"
    public static let summary = "connect one wristband and record its raw notifications to a file"
    public static let usage = """
        empalinkctl capture --address ADDR --out FILE [--seconds N] [--wait N] [--config PATH]
          --address  the wristband, e.g. 00:07:80:9F:F1:67 (naming it is the operator's choice: no whitelist
                     entry needed; the configured API key must unlock it). Refused while it is connected (to
                     empalinkd or any other central): a second connection would break both.
          --out      capture file (SPEC 6.4 records), created 0600: it holds raw physiology
          --seconds  how long to record once streaming (1-86400, default 60)
          --wait     how long to look for the wristband and connect it before giving up (1-3600, default 30)
          --config   agent configuration for the adapter and API key (default /etc/empalink/empalinkd.toml)
        """

    /// Records notifications into a growing byte buffer and reports through the API's delegates.
    final class Recorder: EmpaticaDelegate, EmpaticaDeviceDelegate {
        let target: BluetoothAddress
        let loop: EventLoop
        let seconds: Int
        weak var api: EmpaticaAPI?
        var device: EmpaticaDeviceManager?
        var bytes: [UInt8] = []
        var records = 0
        var failure: String?
        var stopTimer: TimerHandle?

        init(target: BluetoothAddress, loop: EventLoop, seconds: Int) {
            self.target = target
            self.loop = loop
            self.seconds = seconds
        }

        func didDiscoverDevices(_ devices: [EmpaticaDeviceManager]) {
            guard self.device == nil, let found = devices.first(where: { $0.address == self.target }) else { return }
            // BlueZ has one link per device: connecting one the agent streams would tear down its link, and ours.
            if found.isLinkUp {
                self.failure = "\(self.target) is already connected (empalinkd streams it, or another central "
                    + "holds it); capturing it would break both links: stop the agent (systemctl stop empalinkd) or "
                    + "disconnect the other central first"
                self.loop.stop()
                return
            }
            self.device = found
            found.rawTap = { [unowned self] characteristic, payload, arrival in
                let micros = UInt64(max(arrival, 0) * 1e6)
                if (try? E4Capture.append(arrivalMicros: micros, characteristic: characteristic.uuid16 ?? 0,
                                          payload: payload, to: &self.bytes)) != nil {
                    self.records += 1
                }
            }
            do {
                try found.connect(delegate: self, options: .init(autoReconnect: true))
            } catch {
                self.failure = error.description
                self.loop.stop()
            }
        }

        /// Gives up when the wristband is not streaming `seconds` after the start.
        func startWaiting(seconds: Int) {
            _ = try? self.loop.scheduleTimer(after: .seconds(Int64(seconds))) { [weak self] in
                guard let self, self.stopTimer == nil, self.failure == nil else { return }
                if let device = self.device {
                    let reason = device.lastError.map { ": \($0)" } ?? ""
                    self.failure = "\(self.target) was found but did not connect within \(seconds) s\(reason)"
                } else {
                    self.failure = "\(self.target) was not seen within \(seconds) s (is it on, in range, and not "
                        + "connected to a phone? `empalinkctl scan` lists what is advertising)"
                }
                self.loop.stop()
            }
        }

        func didUpdateDeviceStatus(_ status: DeviceStatus, for device: EmpaticaDeviceManager) {
            Console.err("capture: \(device.serialNumber) \(status.rawValue)")
            if status == .connected, self.stopTimer == nil, self.failure == nil {
                self.stopTimer = try? self.loop.scheduleTimer(after: .seconds(Int64(self.seconds))) { [weak self] in
                    self?.loop.stop()
                }
            }
        }
    }

    public static func run(arguments: [String]) -> Int32 {
        let values: [String: String]
        switch CtlSupport.flags(arguments, allowed: ["--address", "--out", "--seconds", "--wait",
                                                           "--config"]) {
        case .success(let parsed): values = parsed
        case .failure(let message):
            Console.err("capture: \(message.text)")
            Console.err("usage: \(self.usage)")
            return 2
        }
        guard let addressText = values["--address"], let address = BluetoothAddress(addressText) else {
            Console.err("capture: --address expects a Bluetooth address like 00:07:80:9F:F1:67")
            return 2
        }
        guard let out = values["--out"] else {
            Console.err("capture: --out FILE is required")
            return 2
        }
        guard let seconds = CtlSupport.seconds(values["--seconds"], default: 60, range: 1...86400) else {
            Console.err("capture: --seconds expects a whole number from 1 to 86400")
            return 2
        }
        guard let wait = CtlSupport.seconds(values["--wait"], default: 30, range: 1...3600) else {
            Console.err("capture: --wait expects a whole number from 1 to 3600")
            return 2
        }
        let configuration: AgentConfiguration?
        switch CtlSupport.configuration(path: values["--config"], command: "capture") {
        case .success(let loaded): configuration = loaded
        case .failure(let exit): return exit.code
        }
        guard let configuration else {
            Console.err("capture: error: an API key is needed: pass --config with auth.api_key_file")
            return 2
        }
        let key: String
        do throws(APIKeyError) {
            guard let loaded = try APIKey.load(configuration.auth) else {
                Console.err("capture: error: the configuration has no auth.api_key or auth.api_key_file")
                return 2
            }
            key = loaded
        } catch {
            Console.err("capture: error: \(error.message)")
            return 2
        }
        guard let loop = CtlSupport.loop(command: "capture") else { return 1 }
        var options = EmpaticaAPI.Options()
        options.adapter = configuration.bluetooth.adapter
        options.rssiMin = configuration.bluetooth.rssiMin
        options.keyringPath = configuration.auth.keyring
        options.connectTimeout = .seconds(Int64(configuration.bluetooth.connectTimeoutSeconds))
        let recorder = Recorder(target: address, loop: loop, seconds: seconds)
        let api: EmpaticaAPI
        do throws(EmpaLinkError) {
            api = try EmpaticaAPI(loop: loop, options: options)
            recorder.api = api
            recorder.startWaiting(seconds: wait)
            Console.err("capture: looking for \(address) (up to \(wait) s; --wait to change)")
            try api.authenticate(apiKey: key)
            try api.discoverDevices(delegate: recorder)
        } catch {
            Console.err("capture: error: \(error)")
            return 1
        }
        loop.run()
        recorder.device?.disconnect()
        _ = try? loop.scheduleTimer(after: .milliseconds(500)) { loop.stop() }
        loop.run()
        api.close()
        loop.close()
        if let failure = recorder.failure {
            Console.err("capture: error: \(failure)")
            return 1
        }
        // Raw physiology: owner-only like the spool, also when an older capture is overwritten.
        let fd = Glibc.open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0, fchmod(fd, 0o600) == 0 else {
            Console.err("capture: \(out): error: cannot create: \(Errno.current)")
            if fd >= 0 { Glibc.close(fd) }
            return 1
        }
        let file = FileDescriptor(rawValue: fd)
        defer { file.close() }
        let written: Errno? = recorder.bytes.withUnsafeBytes { raw in
            do throws(Errno) {
                try file.writeAll(raw)
                return nil
            } catch {
                return error
            }
        }
        if let written {
            Console.err("capture: \(out): error: cannot write: \(written)")
            return 1
        }
        Console.err("capture: \(recorder.records) notifications written to \(out)")
        return recorder.device?.counters.notifications ?? 0 > 0 ? 0 : 1
    }
}
