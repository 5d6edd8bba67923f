#if canImport(Glibc)
import Glibc
#endif
import DBus
import E4
import EventLoop
import Posix

extension SimulatedCharacteristic {
    /// Opens the `SOCK_SEQPACKET` pair of an `AcquireNotify` for `owner`: our end is kept and watched on `loop`
    /// (`onEvent` runs when the other side writes or hangs up), the other end is returned to be sent in the reply
    /// and then closed (D-Bus sends a duplicate).
    ///
    /// - Returns: the end to send, or the `Failed` error bluetoothd answers when it cannot make the pair.
    func openNotifySocket(owner: String?, on loop: EventLoop,
                          onEvent: @escaping (SimulatedCharacteristic) -> Void) -> Result<FileDescriptor, DBusError> {
        let ours: FileDescriptor
        let theirs: FileDescriptor
        do {
            (ours, theirs) = try FileDescriptor.socketPair(type: CInt(SOCK_SEQPACKET.rawValue), nonBlocking: true)
        } catch {
            return .failure(BlueZError.failed("Failed to create socket pair: \(error)"))
        }
        do {
            self.notifyRegistration = try loop.register(ours, interest: [.readable, .readHangup]) {
                [weak self] _ in
                guard let self else { return }
                onEvent(self)
            }
        } catch {
            ours.close()
            theirs.close()
            return .failure(BlueZError.failed("Failed to watch socket: \(error)"))
        }
        self.notifyFD = ours
        self.notifyOwner = owner
        return .success(theirs)
    }

    /// Writes one notification to the acquired socket, if any, without blocking: bluetoothd reads one packet per
    /// notification.
    ///
    /// - Returns: the `errno` of a failed send (`EAGAIN`: the reader is behind); `nil` when sent or not acquired.
    func sendOnNotifySocket(_ bytes: E4PacketBytes) -> CInt? {
        guard let fd = self.notifyFD else { return nil }
        let sent = bytes.withUnsafeBytes { raw in
            send(fd.rawValue, raw.baseAddress, raw.count, CInt(MSG_DONTWAIT) | CInt(MSG_NOSIGNAL))
        }
        return sent < 0 ? errno : nil
    }

    /// Drains our end of the acquired socket after it became readable: whether the other side hung up (or the
    /// socket failed), so the acquisition is over.
    func notifySocketHungUp() -> Bool {
        guard let fd = self.notifyFD else { return false }
        var scratch: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        let n = withUnsafeMutableBytes(of: &scratch) { buffer in
            recv(fd.rawValue, buffer.baseAddress, buffer.count, CInt(MSG_DONTWAIT))
        }
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)
    }
}
