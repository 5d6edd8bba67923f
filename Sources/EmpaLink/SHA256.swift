/// SHA-256 (FIPS 180-4, section 6.2) in Swift, for the keyring.
///
/// The keyring hashes one API key at start-up; libcrypto's `EVP_Digest` did it before, but initialising
/// OpenSSL's provider machinery for that one hash cost the daemon about 2 MiB of resident memory (see
/// Docs/performance.md). This is the plain, portable algorithm: no table lookups indexed by data, so its timing
/// does not depend on the bytes hashed, only on their length.
///
/// ```swift
/// var hasher = SHA256()
/// hasher.update(Array("abc".utf8))
/// let digest = hasher.finalize()   // ba7816bf…f20015ad
/// ```
public struct SHA256: Sendable {
    /// The digest's length in bytes.
    public static let byteCount = 32

    /// The first 32 bits of the fractional parts of the cube roots of the first 64 primes (section 4.2.2).
    static let roundConstants: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    /// The first 32 bits of the fractional parts of the square roots of the first 8 primes (section 5.3.3).
    static let initialState: [UInt32] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    ]

    var state: [UInt32] = Self.initialState
    /// Bytes of the current block not yet compressed (fewer than 64).
    var block: [UInt8] = []
    /// Bytes hashed so far; FIPS 180-4 bounds a message at 2⁶⁴ − 1 bits.
    var length: UInt64 = 0

    public init() {
        self.block.reserveCapacity(64)
    }

    /// Hashes `bytes` in one call.
    ///
    /// - Returns: the 32-byte digest.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Adds `bytes` to the message.
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { self.update($0) }
    }

    /// Adds `bytes` to the message.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        self.length &+= UInt64(bytes.count)
        var index = 0
        if !self.block.isEmpty {
            let taken = min(64 - self.block.count, bytes.count)
            self.block.append(contentsOf: bytes[0..<taken])
            index = taken
            guard self.block.count == 64 else { return }
            self.block.withUnsafeBytes { self.compress($0) }
            self.block.removeAll(keepingCapacity: true)
        }
        while bytes.count - index >= 64 {
            self.compress(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + 64)]))
            index += 64
        }
        self.block.append(contentsOf: bytes[index...])
    }

    /// Pads the message (section 5.1.1) and returns its digest; the hasher is used up.
    ///
    /// - Returns: the 32-byte digest, big-endian words H0…H7.
    public consuming func finalize() -> [UInt8] {
        let bits = self.length &* 8
        var padding: [UInt8] = [0x80]
        // The 0x80 byte, zeros, and the 8-byte length end the last block on a 64-byte boundary.
        let used = (self.block.count + 1) % 64
        padding += [UInt8](repeating: 0, count: used <= 56 ? 56 - used : 120 - used)
        for shift in stride(from: 56, through: 0, by: -8) {
            padding.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
        }
        let length = self.length
        self.update(padding)
        self.length = length
        var digest: [UInt8] = []
        digest.reserveCapacity(Self.byteCount)
        for word in self.state {
            digest += [UInt8(word >> 24), UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 8),
                       UInt8(truncatingIfNeeded: word)]
        }
        return digest
    }

    /// Processes one 64-byte block (section 6.2.2).
    mutating func compress(_ chunk: UnsafeRawBufferPointer) {
        var schedule = [UInt32](repeating: 0, count: 64)
        for t in 0..<16 {
            schedule[t] = UInt32(chunk[4 * t]) << 24 | UInt32(chunk[4 * t + 1]) << 16
                | UInt32(chunk[4 * t + 2]) << 8 | UInt32(chunk[4 * t + 3])
        }
        for t in 16..<64 {
            let s0 = Self.rotate(schedule[t - 15], 7) ^ Self.rotate(schedule[t - 15], 18) ^ (schedule[t - 15] >> 3)
            let s1 = Self.rotate(schedule[t - 2], 17) ^ Self.rotate(schedule[t - 2], 19) ^ (schedule[t - 2] >> 10)
            schedule[t] = schedule[t - 16] &+ s0 &+ schedule[t - 7] &+ s1
        }
        var a = self.state[0], b = self.state[1], c = self.state[2], d = self.state[3]
        var e = self.state[4], f = self.state[5], g = self.state[6], h = self.state[7]
        for t in 0..<64 {
            let sum1 = Self.rotate(e, 6) ^ Self.rotate(e, 11) ^ Self.rotate(e, 25)
            let choose = (e & f) ^ (~e & g)
            let temp1 = h &+ sum1 &+ choose &+ Self.roundConstants[t] &+ schedule[t]
            let sum0 = Self.rotate(a, 2) ^ Self.rotate(a, 13) ^ Self.rotate(a, 22)
            let majority = (a & b) ^ (a & c) ^ (b & c)
            let temp2 = sum0 &+ majority
            h = g
            g = f
            f = e
            e = d &+ temp1
            d = c
            c = b
            b = a
            a = temp1 &+ temp2
        }
        self.state[0] &+= a
        self.state[1] &+= b
        self.state[2] &+= c
        self.state[3] &+= d
        self.state[4] &+= e
        self.state[5] &+= f
        self.state[6] &+= g
        self.state[7] &+= h
    }

    /// ROTR^n(x) (section 3.2).
    @inline(__always)
    static func rotate(_ x: UInt32, _ n: UInt32) -> UInt32 {
        (x >> n) | (x << (32 - n))
    }

    /// Whether `a` and `b` are equal, taking the same time wherever they differ: every byte is compared, the
    /// differences are accumulated, and nothing branches on them. Their lengths are not secret (a digest's is
    /// fixed) and are compared first.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<a.count { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
