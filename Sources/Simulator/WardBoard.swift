/// One simulated board of the ward (`[[ward.board]]`): its name, where it stands, how many adapters it has and,
/// optionally, its bus.
public struct WardBoard: Hashable, Sendable {
    /// 1–32 of `A–Z a–z 0–9 _ -`: it names the board on the command line (`--bus NAME=ADDRESS`), in the logs, the
    /// truth and `Stats`.
    public var name: String
    /// The D-Bus address of its private bus, unless the command line gives it.
    public var address: String?
    public var x: Double
    public var y: Double
    /// Its adapters, `hci0` … (1…8, key `adapters`; SPEC §18 "Several adapters per board").
    public var adapters: Int

    public init(name: String, address: String? = nil, x: Double, y: Double, adapters: Int = 1) {
        self.name = name
        self.address = address
        self.x = x
        self.y = y
        self.adapters = adapters
    }

    /// Whether `name` may name a board.
    static func isValidName(_ name: String) -> Bool {
        (1...32).contains(name.utf8.count) && name.utf8.allSatisfy { c in
            let letter = (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z"))
                || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z"))
            let digit = c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")
            return letter || digit || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
        }
    }
}
