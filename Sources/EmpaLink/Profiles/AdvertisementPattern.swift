/// One `or_patterns` entry of a BlueZ advertisement monitor (`org.bluez.AdvertisementMonitor1.Patterns`, `(yyay)`):
/// advertising data of type ``adType`` whose bytes from ``offset`` start with ``bytes``.
public struct AdvertisementPattern: Sendable, Equatable {
    public var offset: UInt8
    public var adType: UInt8
    public var bytes: [UInt8]

    public init(offset: UInt8 = 0, adType: UInt8, bytes: [UInt8]) {
        self.offset = offset
        self.adType = adType
        self.bytes = bytes
    }

    /// The Complete Local Name (AD type 0x09) equal to, or starting with, `name`.
    public static func completeLocalName(_ name: String) -> AdvertisementPattern {
        AdvertisementPattern(adType: 0x09, bytes: Array(name.utf8))
    }
}
