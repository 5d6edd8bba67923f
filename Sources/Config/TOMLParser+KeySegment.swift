extension TOMLParser {
    /// One part of a dotted key as written: its text (after unquoting) and where it starts.
    struct KeySegment: Hashable, Sendable {
        var name: String
        var position: SourcePosition
    }
}
