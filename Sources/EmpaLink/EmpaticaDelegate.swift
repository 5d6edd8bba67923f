/// Receives the API's Bluetooth status and discovery results (the SDK's `EmpaticaDelegate`), on the event-loop
/// thread.
public protocol EmpaticaDelegate: AnyObject {
    func didUpdateBLEStatus(_ status: BLEStatus)
    /// Every device a profile recognises (an E4-family wristband, …), whitelisted or not; an empty array when none.
    func didDiscoverDevices(_ devices: [EmpaticaDeviceManager])
}

extension EmpaticaDelegate {
    public func didUpdateBLEStatus(_ status: BLEStatus) {}
    public func didDiscoverDevices(_ devices: [EmpaticaDeviceManager]) {}
}
