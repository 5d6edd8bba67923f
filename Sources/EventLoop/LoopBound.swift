/// A loop-owned value that may travel through `@Sendable` closures, but may only be used on its loop, as
/// swift-nio's `NIOLoopBound`.
///
/// Typical use: a non-`Sendable` object of the D-Bus or MQTT layer that another thread wants to reach with
/// ``EventLoop/execute(_:)``: wrap it on the loop, send the wrapper, unwrap it inside the work item. Debug
/// builds stop the process when the value is created or read off the loop; release builds check nothing.
public struct LoopBound<Value>: @unchecked Sendable {
    // @unchecked: `value` is only reachable through the getter below, which asserts the loop's thread.

    /// The loop the value belongs to.
    public let eventLoop: EventLoop
    private let storage: Value

    /// Wraps `value`; call it on `eventLoop`'s thread.
    public init(_ value: Value, eventLoop: EventLoop) {
        eventLoop.assertInEventLoop()
        self.eventLoop = eventLoop
        self.storage = value
    }

    /// The wrapped value; read it on the loop's thread only.
    public var value: Value {
        self.eventLoop.assertInEventLoop()
        return self.storage
    }
}
