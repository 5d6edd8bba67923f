/// What a device says about itself: the standard Device Information Service (0x180A) strings and, for a heart-rate
/// sensor, its Body Sensor Location (0x2A38). Read once per connection; shown in status and devices (SPEC §16).
public struct DeviceInformation: Sendable, Equatable {
    public var manufacturer: String?
    public var model: String?
    public var serialNumber: String?
    public var firmware: String?
    /// Where a heart-rate sensor is worn (`"chest"`, `"wrist"` …).
    public var bodySensorLocation: String?

    public init(manufacturer: String? = nil, model: String? = nil, serialNumber: String? = nil,
                firmware: String? = nil, bodySensorLocation: String? = nil) {
        self.manufacturer = manufacturer
        self.model = model
        self.serialNumber = serialNumber
        self.firmware = firmware
        self.bodySensorLocation = bodySensorLocation
    }

    /// The known fields as (key, value), in a fixed order, for status messages.
    public var fields: [(key: String, value: String)] {
        [("manufacturer", self.manufacturer), ("model", self.model), ("serial_number", self.serialNumber),
         ("firmware", self.firmware), ("body_sensor_location", self.bodySensorLocation)]
            .compactMap { field in field.1.map { (field.0, $0) } }
    }

    public var isEmpty: Bool { self.fields.isEmpty }
}
