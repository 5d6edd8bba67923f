import Logging

/// `empalink-sim`'s parsed command line.
public struct SimulatorOptions: Equatable, Sendable {
    public enum Bus: Equatable, Sendable {
        case address(String)
        case system
        case session
    }

    public var bus: Bus?
    public var devices = 1
    /// Heart-rate straps after the ``devices`` wristbands (`--hrs N`).
    public var heartRateStraps = 0
    /// Adapters `hci0` … `hciN-1` of the BlueZ look-alike (`--adapters N`, 1…8).
    public var adapters = 1
    public var seed: UInt64 = 1
    public var scenarioPath: String?
    public var truthDirectory: String?
    public var logLevel = LogLevel.info
    public var help = false
    /// The peripheral face (`--peripheral`): a GATT application of a real bluetoothd on ``adapter``.
    public var peripheral = false
    /// `hciN`, with `--peripheral`.
    public var adapter: String?
    /// Seconds to wait for bluetoothd, the adapter and its power, with `--peripheral`.
    public var adapterTimeout = 30.0
    /// The ward scenario (`--ward FILE`): one process, one BlueZ face per board.
    public var wardPath: String?
    /// With `--ward`: each `--bus NAME=ADDRESS`, in command-line order.
    public var boardBuses: [BoardBus] = []

    /// A board's bus given on the command line (`--bus NAME=ADDRESS` with `--ward`).
    public struct BoardBus: Equatable, Sendable {
        public var board: String
        public var address: String

        public init(board: String, address: String) {
            self.board = board
            self.address = address
        }
    }

    public init() {}
}
