import Consumer

/// The `e4-server` line protocol (SPEC §17.2): the input is what a TCP client sends. It is cut into lines as
/// `E4StreamingServer` cuts them (at `\n`, decoded as UTF-8 with replacement, at most ``E4StreamingServer/lineLimit``
/// bytes without a newline) and each line goes to one `E4ProtocolSession` over a directory with an allowed and
/// connected wristband, an allowed one and a refused one.
enum E4ServerFuzz {
    static let target = FuzzTarget(
        name: "e4-server",
        summary: "bytes from a TCP client: lines into E4ProtocolSession.handle over a populated directory"
    ) { bytes in
        var session = E4ProtocolSession()
        var start = 0
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\n") {
                let line = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                let reply = session.handle(line, directory: directory)
                if let text = reply.line {
                    precondition(!text.utf8.contains(UInt8(ascii: "\n")), "a reply holds a newline: \(text)")
                }
                for stream in E4Subscription.allCases { _ = session.wants(stream, from: "A1B2C3") }
                if reply.close { return }
                start = index + 1
            } else if index - start >= E4StreamingServer.lineLimit {
                return
            }
            index += 1
        }
    }

    static let directory: E4Directory = {
        var directory = E4Directory()
        directory.seen(["a1b2c3": SeenDevice(allowed: true), "d4e5f6": SeenDevice(allowed: true),
                        "0badc0": SeenDevice(allowed: false)])
        _ = directory.status(DeviceState(status: "connected"), board: "board", serial: "a1b2c3")
        return directory
    }()
}
