import Testing

@testable import EmpaLink

/// ``SHA256`` against the FIPS 180-4 / NIST CAVP examples, the padding boundaries and split input.
@Suite struct SHA256Tests {
    static func hex(_ bytes: [UInt8]) -> String { Keyring.hex(bytes) }

    /// The NIST example messages (FIPS 180-2 appendix B, NIST's "SHA256.pdf" examples).
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        // 448 bits: the padding no longer fits the block, a second one follows.
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        // 896 bits: two blocks of message.
        ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
            + "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"),
    ])
    func matchesTheNISTExamples(message: String, digest: String) {
        #expect(Self.hex(SHA256.hash(Array(message.utf8))) == digest)
    }

    @Test func hashesAMillionAs() {
        // NIST's long message: one million repetitions of "a", fed in uneven pieces.
        var hasher = SHA256()
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 999)
        var left = 1_000_000
        while left > 0 {
            let count = min(left, piece.count)
            hasher.update(Array(piece[0..<count]))
            left -= count
        }
        #expect(Self.hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Lengths around the block and padding boundaries (55/56 bytes: the length still fits the block or not),
    /// bytes `(7 i + 3) mod 256`; digests from Python's `hashlib`.
    @Test(arguments: [
        (1, "084fed08b978af4d7d196a7446a86b58009e636b611db16211b65a9aadff29c5"),
        (55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"),
        (56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"),
        (57, "35df609437dcfea3279283ab79fd554e2bf78f8f7ae2de532d8ee300b09e8f73"),
        (63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"),
        (64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"),
        (65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"),
        (119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"),
        (120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"),
        (127, "a8d23e75d936f303d248888d9b165ee543f4cbafcad3c9dd2a79bd84faa11d07"),
        (128, "d2742f1f4ac6bb7ca2b239ee18402ba8b3f9f8e652d2a72973c2b9ba11c08cf6"),
    ])
    func padsAtEveryBoundary(length: Int, digest: String) {
        let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        #expect(Self.hex(SHA256.hash(bytes)) == digest)
    }

    @Test func splittingTheInputAnywhereGivesTheSameDigest() {
        let bytes = (0..<150).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let whole = SHA256.hash(bytes)
        for split in 0...bytes.count {
            var hasher = SHA256()
            hasher.update(Array(bytes[..<split]))
            hasher.update(Array(bytes[split...]))
            #expect(hasher.finalize() == whole, "split at \(split)")
        }
        var byByte = SHA256()
        for byte in bytes { byByte.update([byte]) }
        #expect(byByte.finalize() == whole)
    }

    @Test func comparesDigestsWithoutRegardToWhereTheyDiffer() {
        let digest = SHA256.hash(Array("key".utf8))
        #expect(SHA256.constantTimeEqual(digest, digest))
        for index in [0, 15, 31] {
            var other = digest
            other[index] ^= 0x01
            #expect(!SHA256.constantTimeEqual(digest, other), "differs at \(index)")
        }
        #expect(!SHA256.constantTimeEqual(digest, Array(digest.prefix(31))))
        #expect(SHA256.constantTimeEqual([], []))
    }

    @Test func theKeyringAuthenticatesWithIt() throws {
        // A keyring entry written with the Swift hash unlocks with the same key and refuses a near miss.
        let text = try #require(Keyring.entryText(apiKey: "ward-3-key", devices: nil))
        #expect(text.contains(Self.hex(SHA256.hash(Array("ward-3-key".utf8)))))
        let ring = try Keyring.parse(Array(text.utf8))
        let today = CalendarDay(year: 2026, month: 11, day: 29)
        #expect((try? ring.authenticate(apiKey: "ward-3-key", today: today).get()) != nil)
        #expect((try? ring.authenticate(apiKey: "ward-3-kez", today: today).get()) == nil)
    }
}
