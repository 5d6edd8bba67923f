/// One stream message of SPEC §10, read and checked.
public struct DataMessage: Equatable, Sendable {
    public var stream: ConsumerStream
    /// The connection session id.
    public var sid: String
    public var seq: Int
    /// Sampled streams: time of the first sample (s since 1970) and the rate; 0 for event streams.
    public var start: Double
    public var rate: Double
    /// Sampled streams: the samples row-major (`acc`: x, y, z per sample).
    public var samples: [Double]
    /// Event streams: `(t, value)`; `tag` has value 0.
    public var events: [Event]
    /// `hr`: where the message's values came from — `beats`, `spectral`, `device` (a strap's own bpm) or whatever
    /// token a newer agent sends; `beats` for an agent from before `source` was published. `nil` for other streams.
    public var source: String?

    public struct Event: Equatable, Sendable {
        public var time: Double
        public var value: Double
        /// `hr`: how far the value can be trusted, 0…1 (1 for an agent from before `confidence` was published).
        public var confidence: Double?
        public init(time: Double, value: Double, confidence: Double? = nil) {
            self.time = time
            self.value = value
            self.confidence = confidence
        }
    }

    public init(stream: ConsumerStream, sid: String, seq: Int, start: Double = 0, rate: Double = 0,
                samples: [Double] = [], events: [Event] = [], source: String? = nil) {
        self.stream = stream
        self.source = source
        self.sid = sid
        self.seq = seq
        self.start = start
        self.rate = rate
        self.samples = samples
        self.events = events
    }

    /// Number of samples (sampled streams) or events.
    public var count: Int { self.stream.isSampled ? self.samples.count / self.stream.columns : self.events.count }

    /// Time of sample `index` of a sampled stream.
    public func time(of index: Int) -> Double { self.start + Double(index) / self.rate }

    /// Reads a stream payload.
    ///
    /// - Throws: ``PayloadError`` for anything that does not fit the contract: a missing or mistyped field, an
    ///   empty `v`, a rate other than the stream's, an `acc` sample that is not three integers in -128…127, times
    ///   before 2001 (a board whose clock is unset still reports 1970-based times, which no export can place);
    ///   an `hr` `source` that is not a token, or a `confidence` list that is not one number in 0…1 per value.
    public static func decode(_ json: PayloadJSON, stream: ConsumerStream) throws(PayloadError) -> DataMessage {
        guard let sid = json["sid"]?.string, ConsumerTopic.isToken(sid, maximumLength: 64) else { throw PayloadError("missing or invalid sid") }
        guard let seq = json["seq"]?.count else { throw PayloadError("missing or invalid seq") }
        guard let items = json["v"]?.array, !items.isEmpty else { throw PayloadError("missing or empty v") }
        var message = DataMessage(stream: stream, sid: sid, seq: seq)
        if stream.isSampled {
            guard let start = json["t"]?.number, start > 1e9 else { throw PayloadError("missing or invalid t") }
            guard let rate = json["fs"]?.number, rate == Self.rate(of: stream) else {
                throw PayloadError("fs is not \(Self.rate(of: stream)) for \(stream.rawValue)")
            }
            message.start = start
            message.rate = rate
            message.samples.reserveCapacity(items.count * stream.columns)
            for item in items {
                if stream == .acc {
                    guard let axes = item.array, axes.count == 3 else { throw PayloadError("acc sample is not [x,y,z]") }
                    for axis in axes {
                        guard let value = axis.number, value == value.rounded(), (-128...127).contains(value) else {
                            throw PayloadError("acc value is not an integer in -128...127")
                        }
                        message.samples.append(value)
                    }
                } else {
                    guard let value = item.number else { throw PayloadError("sample is not a number") }
                    message.samples.append(value)
                }
            }
        } else {
            var confidences: [PayloadJSON]?
            if stream == .hr {
                if let source = json["source"] {
                    guard let name = source.string, ConsumerTopic.isToken(name, maximumLength: 32) else {
                        throw PayloadError("hr source is not a token")
                    }
                    message.source = name
                } else {
                    message.source = "beats"
                }
                if let list = json["confidence"] {
                    guard let values = list.array, values.count == items.count else {
                        throw PayloadError("hr confidence is not one number per value")
                    }
                    confidences = values
                }
            }
            message.events.reserveCapacity(items.count)
            for item in items {
                if stream == .tag {
                    guard let time = item.number, time > 1e9 else { throw PayloadError("tag is not a time") }
                    message.events.append(Event(time: time, value: 0))
                } else {
                    guard let pair = item.array, pair.count == 2, let time = pair[0].number, time > 1e9,
                          let value = pair[1].number
                    else { throw PayloadError("\(stream.rawValue) item is not [t, value]") }
                    var event = Event(time: time, value: value)
                    if stream == .hr {
                        event.confidence = 1
                        if let confidences {
                            guard let confidence = confidences[message.events.count].number,
                                  (0...1).contains(confidence)
                            else { throw PayloadError("hr confidence is not a number in 0...1") }
                            event.confidence = confidence
                        }
                    }
                    message.events.append(event)
                }
            }
        }
        return message
    }

    /// The contract's rate of a sampled stream.
    public static func rate(of stream: ConsumerStream) -> Double {
        switch stream {
        case .bvp: return 64
        case .acc: return 32
        case .gsr, .temp: return 4
        case .ibi, .hr, .battery, .tag, .contact: return 0
        }
    }
}
