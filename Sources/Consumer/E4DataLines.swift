/// The data lines of Empatica's streaming-server protocol for one stream message (SPEC §17.2): `E4_Acc <t> <x> <y>
/// <z>`, `E4_Bvp <t> <v>`, `E4_Gsr <t> <µS>`, `E4_Temperature <t> <°C>`, `E4_Hr <t> <bpm>` + `E4_Ibi <t> <s>`,
/// `E4_Battery <t> <level>`, `E4_Tag <t>`; each ends in `\r\n`. Times have at most 5 decimals, values at most 7
/// significant digits.
public enum E4DataLines {
    /// All lines of `message`, concatenated; `decimalComma` writes `,` for the decimal point.
    public static func text(_ message: DataMessage, decimalComma: Bool = false) -> String {
        var text = ""
        func time(_ t: Double) -> String { DecimalText.upTo(t, 5) }
        func value(_ v: Double) -> String { DecimalText.significant(v, 7) }
        switch message.stream {
        case .acc:
            for index in 0..<message.count {
                let base = index * 3
                text += "E4_Acc \(time(message.time(of: index))) \(Int(message.samples[base])) "
                    + "\(Int(message.samples[base + 1])) \(Int(message.samples[base + 2]))\r\n"
            }
        case .bvp, .gsr, .temp:
            let name = message.stream == .bvp ? "E4_Bvp" : message.stream == .gsr ? "E4_Gsr" : "E4_Temperature"
            for index in 0..<message.count {
                text += "\(name) \(time(message.time(of: index))) \(value(message.samples[index]))\r\n"
            }
        case .ibi:
            for event in message.events where event.value > 0 {
                let t = time(event.time)
                text += "E4_Hr \(t) \(value(60 / event.value))\r\nE4_Ibi \(t) \(value(event.value))\r\n"
            }
        case .battery:
            for event in message.events { text += "E4_Battery \(time(event.time)) \(value(event.value))\r\n" }
        case .tag:
            for event in message.events { text += "E4_Tag \(time(event.time))\r\n" }
        case .hr, .contact:
            break
        }
        if decimalComma {
            return String(String.UnicodeScalarView(text.unicodeScalars.map { $0 == "." ? "," : $0 }))
        }
        return text
    }
}
