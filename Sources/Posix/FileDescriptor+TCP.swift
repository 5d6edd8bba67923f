import CLinux

extension FileDescriptor {
    /// Holds back (`true`) or releases (`false`) a TCP socket's partial segments (`TCP_CORK`), so several small
    /// writes leave as one segment.
    ///
    /// - Throws: ``Errno`` (`ENOTSOCK`, `EOPNOTSUPP` on a socket that is not TCP).
    public func setTCPCork(_ on: Bool) throws(Errno) {
        if clinux_set_tcp_cork(self.rawValue, on ? 1 : 0) != 0 { throw Errno.current }
    }
}
