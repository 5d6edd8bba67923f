// An app built on the EmpaLink API alone, as an app developer would use the SDK: authenticate, discover,
// connect the first wristband the key unlocks, print its heart data, disconnect. Run it against real BlueZ or
// `empalink-sim` (set DBUS_SYSTEM_BUS_ADDRESS to the simulator's bus):
//
//     empalink-example API_KEY KEYRING.toml [SECONDS]

#if canImport(Glibc)
import Glibc
#endif
import EmpaLink
import EventLoop

final class HeartMonitor: EmpaticaDelegate, EmpaticaDeviceDelegate {
    let loop: EventLoop
    var device: EmpaticaDeviceManager?
    var bvpSamples = 0

    init(loop: EventLoop) { self.loop = loop }

    func didUpdateBLEStatus(_ status: BLEStatus) {
        print("Bluetooth: \(status)")
    }

    func didDiscoverDevices(_ devices: [EmpaticaDeviceManager]) {
        guard self.device == nil, let first = devices.first(where: \.allowed) else { return }
        self.device = first
        print("connecting \(first.name) \(first.serialNumber) (\(first.address))")
        do {
            try first.connect(delegate: self)
        } catch {
            print("cannot connect: \(error)")
        }
    }

    func didUpdateDeviceStatus(_ status: DeviceStatus, for device: EmpaticaDeviceManager) {
        print("\(device.serialNumber): \(status)")
    }

    func didReceiveBVP(_ bvp: Float, timestamp: Double, from device: EmpaticaDeviceManager) {
        self.bvpSamples += 1
    }

    func didReceiveIBI(_ ibi: Float, timestamp: Double, from device: EmpaticaDeviceManager) {
        print("IBI \(ibi) s")
    }

    func didReceiveHeartRate(_ bpm: Float, timestamp: Double, from device: EmpaticaDeviceManager) {
        print("heart rate \(bpm) bpm")
    }

    func didReceiveGSR(_ gsr: Float, timestamp: Double, from device: EmpaticaDeviceManager) {
        print("EDA \(gsr) µS")
    }

    func didReceiveBatteryLevel(_ level: Float, timestamp: Double, from device: EmpaticaDeviceManager) {
        print("battery \(Int(level * 100)) %")
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    print("usage: empalink-example API_KEY KEYRING.toml [SECONDS]")
    exit(2)
}
let seconds = arguments.count > 3 ? Int64(arguments[3]) ?? 30 : 30
do {
    let loop = try EventLoop()
    var options = EmpaticaAPI.Options()
    options.keyringPath = arguments[2]
    let api = try EmpaticaAPI(loop: loop, options: options)
    let monitor = HeartMonitor(loop: loop)
    try api.authenticate(apiKey: arguments[1])
    try api.discoverDevices(delegate: monitor)
    try loop.scheduleTimer(after: .seconds(seconds)) {
        monitor.device?.disconnect()
        _ = try? loop.scheduleTimer(after: .milliseconds(500)) { loop.stop() }
    }
    loop.run()
    print("received \(monitor.bvpSamples) BVP samples")
    api.close()
    loop.close()
    exit(monitor.bvpSamples > 0 ? 0 : 1)
} catch {
    print("error: \(error)")
    exit(1)
}
