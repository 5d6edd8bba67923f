import Testing

@testable import EmpaLink

/// What the agent asks BlueZ to filter on, and what it reports, for the RSSI values bluetoothd passes on.
@Suite struct RSSITests {
    @Test func theLowestMinimumSetsNoDiscoveryThreshold() {
        var options = EmpaticaAPI.Options()
        #expect(options.discoveryRSSIThreshold == -100)
        options.rssiMin = -126
        #expect(options.discoveryRSSIThreshold == -126)
        // With a threshold the kernel drops reports without an RSSI (btvirt, some controllers): -127 means none.
        options.rssiMin = -127
        #expect(options.discoveryRSSIThreshold == nil)
    }

    @Test func rssiNotAvailableIsReportedAsUnknown() {
        #expect(EmpaticaDeviceManager.reportedRSSI(127) == nil)
        #expect(EmpaticaDeviceManager.reportedRSSI(-58) == -58)
        #expect(EmpaticaDeviceManager.reportedRSSI(20) == 20)
        #expect(EmpaticaDeviceManager.reportedRSSI(nil) == nil)
    }
}
