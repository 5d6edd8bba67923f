/// One device's decoding state under a ``DeviceProfile``: a decoder per characteristic writing into the
/// preallocated sinks of the pipeline.
///
/// ``receive(channel:_:arrival:into:)`` is the hot path: it is generic over the sink and, like the decoders it
/// calls, must not allocate (`make alloc-check` measures it through this protocol). A class, so the device manager
/// holds it as an existential without copying or boxing per call.
public protocol ProfileDecoder: AnyObject {
    /// Decodes one value of the characteristic at `channel` (a notification, or the read made at session start)
    /// that arrived at `arrival` (seconds since 1970), and hands samples, beats and events to `sink`. A value that
    /// does not decode is counted in ``statistics`` and dropped; a channel that carries no data is ignored.
    func receive<Sink: DecodedStreamSink>(channel: Int, _ bytes: UnsafeRawBufferPointer, arrival: Double,
                                          into sink: inout Sink)
    /// A new connection: counters restart on the device, so decoders, clocks and beat detection start over.
    /// ``statistics`` are kept.
    func reset()
    /// Totals over every characteristic, for metrics.
    var statistics: DecoderStatistics { get }
    /// Timestamp re-anchors (SPEC §8) over every stream.
    var reanchors: UInt64 { get }
    /// What the device said about itself in the values read at session start (empty for a profile that reads none).
    var deviceInformation: DeviceInformation { get }
}

extension ProfileDecoder {
    public var deviceInformation: DeviceInformation { DeviceInformation() }
}
