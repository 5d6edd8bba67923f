/// One coverage-guided fuzz target: a name for the command line and `make fuzz`, and a body that takes one input.
///
/// A body must return normally for every input: a trap (failed precondition, overflow, out-of-range index, force
/// unwrap) or an address-sanitizer report is the finding. Bodies may keep no state between inputs beyond caches
/// that do not change what an input does.
struct FuzzTarget: Sendable {
    /// `config`, `profiles`, …: the corpus directory is `Fuzz/corpus/<name>`.
    let name: String
    /// What the input is and where it goes, for `empalink-fuzz list` and Fuzz/README.md.
    let summary: String
    let body: @Sendable (UnsafeRawBufferPointer) -> Void

    /// Every target, in the order `make fuzz` runs them.
    static let all: [FuzzTarget] = [
        ConfigFuzz.target,
        ProfileFuzz.target,
        CaptureFuzz.target,
        SpoolFuzz.target,
        CommandFuzz.target,
        PayloadFuzz.target,
        E4ServerFuzz.target,
        BlueZFuzz.target,
    ]

    static func named(_ name: String) -> FuzzTarget? {
        self.all.first { $0.name == name }
    }
}

/// Reads a fuzz input from the front: the framing the multi-part targets share (a selector byte, then a length, then
/// that many bytes), total, so every input means something.
struct FuzzInput {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    var isEmpty: Bool { self.offset >= self.bytes.count }

    mutating func byte() -> UInt8? {
        guard self.offset < self.bytes.count else { return nil }
        defer { self.offset += 1 }
        return self.bytes[self.offset]
    }

    /// A little-endian 16-bit length, then at most that many bytes (fewer at the end of the input).
    mutating func chunk() -> UnsafeRawBufferPointer {
        let low = Int(self.byte() ?? 0)
        let high = Int(self.byte() ?? 0)
        return self.take(low | high << 8)
    }

    mutating func take(_ count: Int) -> UnsafeRawBufferPointer {
        let end = min(self.bytes.count, self.offset + count)
        defer { self.offset = end }
        return UnsafeRawBufferPointer(rebasing: self.bytes[self.offset..<end])
    }

    /// Everything not read yet.
    mutating func rest() -> UnsafeRawBufferPointer {
        self.take(self.bytes.count - self.offset)
    }
}

/// Framing for seeds: the inverse of ``FuzzInput/chunk()``.
enum FuzzFrame {
    static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        let count = min(bytes.count, 0xFFFF)
        return [UInt8(count & 0xFF), UInt8(count >> 8)] + bytes.prefix(count)
    }
}
