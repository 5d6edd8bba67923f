import E4

/// The E4 profile's decoding state: ``DeviceStreams`` (decoders, clocks, IBI engine) behind ``ProfileDecoder``.
final class E4ProfileDecoder: ProfileDecoder {
    var streams = DeviceStreams()

    func receive<Sink: DecodedStreamSink>(channel: Int, _ bytes: UnsafeRawBufferPointer, arrival: Double,
                                          into sink: inout Sink) {
        guard let stream = E4DeviceProfile.stream(channel: channel) else { return }
        self.streams.receive(stream, bytes, arrival: arrival, into: &sink)
    }

    func reset() {
        self.streams.reset()
    }

    var statistics: DecoderStatistics {
        let total = self.streams.statistics
        return DecoderStatistics(packets: total.packets, lostPackets: total.lostPackets, duplicates: total.duplicates,
                                 restarts: total.restarts, decodeErrors: total.decodeErrors)
    }

    var reanchors: UInt64 { self.streams.reanchors }
}
