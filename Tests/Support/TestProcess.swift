#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's choice for an ephemeral bind).
public func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket: \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
            bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
        }
    }
    guard bound else { throw HarnessError("bind: \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
public func acceptsConnections(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
            connect(fd, raw, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}

/// A fresh private directory under the temporary directory.
public func makeTemporaryDirectory(_ name: String) throws -> String {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("empalink-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
