@testable import Agent

/// The MQTT command parser (`P/A/cmd`, SPEC §10, §12): the input is a command payload. It goes through the strict
/// flat-JSON parser, the same recognition of the two commands `AgentRuntime.command(topic:payload:retained:)` makes,
/// and the reply and journal excerpt built from it.
enum CommandFuzz {
    static let target = FuzzTarget(
        name: "command",
        summary: "an MQTT command payload: FlatJSON.parse, command recognition, reply and journal excerpt"
    ) { bytes in
        let payload = Array(bytes)
        _ = AgentRuntime.excerpt(payload)
        switch FlatJSON.parse(payload) {
        case .failure(let error):
            _ = AgentRuntime.object([("ok", "false"), ("error", AgentRuntime.quote("malformed command: \(error.message)"))])
        case .success(let members):
            if members.count == 1, case .string(let mode)? = members["mode"] {
                _ = AgentRuntime.object([("mode", AgentRuntime.quote(mode))])
            }
            for (key, value) in members {
                _ = AgentRuntime.object([(key, "\(value)")])
            }
        }
    }
}
