import Posix

/// Why the spool could not open. Everything after opening is counted and reported, never thrown.
public struct SpoolError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: Equatable, Sendable {
        /// The directory cannot be created, opened or listed, or its path names something else.
        case directory
        /// Another process (a second `empalinkd` on the same configuration) holds the directory's lock.
        case locked
        /// The writer thread or its eventfds cannot be created.
        case resources
        /// An option is out of range.
        case invalidOptions
    }

    public var code: Code
    public var message: String
    public var errno: Errno?

    public init(_ code: Code, _ message: String, errno: Errno? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    public var description: String {
        self.errno.map { "\(self.message): \($0)" } ?? self.message
    }
}
