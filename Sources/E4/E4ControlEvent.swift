/// One decoded control event.
public enum E4ControlEvent: Hashable, Sendable {
    /// The button was pressed: publish a tag at the notification's arrival time.
    case tag
    /// An event this profile does not know (byte 0 shown); ignore it.
    case ignored(UInt8)
}
