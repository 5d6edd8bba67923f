/// What the agent's control surfaces refused or could not serve, for `P/A/metrics` and `empalinkctl status`
/// (`control` in the metrics): every rejected input is answered or counted here (SPEC §12).
struct ControlCounters {
    /// Messages that reached the handler of `P/A/cmd` (empty retained-clears included).
    var mqttCommands: UInt64 = 0
    /// MQTT commands answered with an error: malformed, unknown, retained.
    var mqttRejected: UInt64 = 0
    /// Control-socket request lines answered with an error (unknown request).
    var socketRejected: UInt64 = 0
}

extension ControlServer {
    /// Clients of the control socket and what became of the ones not served.
    struct Counters {
        /// Request lines answered (any answer, errors included).
        var requests: UInt64 = 0
        /// Clients told "busy" and closed: ``ControlServer/clientLimit`` were being served.
        var busy: UInt64 = 0
        /// Clients whose line passed ``ControlServer/lineLimit`` bytes without a newline.
        var overlong: UInt64 = 0
        /// Clients that sent no complete line within ``ControlServer/clientTimeout``.
        var timeouts: UInt64 = 0
        /// Clients that hung up (or failed) before a complete line.
        var abandoned: UInt64 = 0
    }
}
