/// A client's `org.bluez.AdvertisementMonitor1` object, activated by `RegisterMonitor` (type `or_patterns`).
final class AdvertisementMonitor {
    struct Pattern: Equatable {
        var start: Int
        var type: UInt8
        var content: [UInt8]
    }

    /// The registering client's unique name and the monitor object's path there.
    let owner: String
    let root: String
    let path: String
    let patterns: [Pattern]
    /// Devices reported with `DeviceFound`, by index, with the time of their last matching advertisement.
    var found: [Int: Double] = [:]

    init(owner: String, root: String, path: String, patterns: [Pattern]) {
        self.owner = owner
        self.root = root
        self.path = path
        self.patterns = patterns
    }

    /// Whether any pattern matches one of the advertisement's AD structures (`or_patterns`).
    func matches(_ advertisingData: [(type: UInt8, data: [UInt8])]) -> Bool {
        self.patterns.contains { pattern in
            advertisingData.contains { ad in
                ad.type == pattern.type && ad.data.count >= pattern.start + pattern.content.count
                    && Array(ad.data[pattern.start..<(pattern.start + pattern.content.count)]) == pattern.content
            }
        }
    }
}
