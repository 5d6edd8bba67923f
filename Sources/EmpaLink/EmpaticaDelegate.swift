/// Receives the API's Bluetooth status and discovery results (the SDK's `EmpaticaDelegate`), on the event-loop
/// thread.
public protocol EmpaticaDelegate: AnyObject {
    func didUpdateBLEStatus(_ status: BLEStatus)
    /// Every device a profile recognises (an E4-family wristband, …), whitelisted or not; an empty array when none.
    func didDiscoverDevices(_ devices: [EmpaticaDeviceManager])
    /// `org.bluez` left its owner `from` for `to` (`nil`: nobody, bluetoothd stopped); `abandonedCalls` calls in
    /// flight to the old owner failed. Every wristband's session ends and resumes on the new owner.
    func didChangeBlueZOwner(from: String, to: String?, abandonedCalls: Int)
}

extension EmpaticaDelegate {
    public func didUpdateBLEStatus(_ status: BLEStatus) {}
    public func didDiscoverDevices(_ devices: [EmpaticaDeviceManager]) {}
    public func didChangeBlueZOwner(from: String, to: String?, abandonedCalls: Int) {}
}
