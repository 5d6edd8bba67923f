#if canImport(Glibc)
import Glibc
#endif
import CMosquitto

/// libmosquitto's process-wide set-up, done once before the first handle is made.
enum MosquittoLibrary {
    /// Runs `mosquitto_lib_init` once per process (Swift initialises globals once, thread-safely).
    ///
    /// It also ignores `SIGPIPE`: over TLS, OpenSSL writes to the socket with `write(2)`, which raises
    /// `SIGPIPE` when the broker has gone — the default action would end the daemon instead of reporting a lost
    /// connection. Plain TCP writes use `MSG_NOSIGNAL` and need no help.
    static let initialized: Bool = {
        _ = mosquitto_lib_init()
        _ = signal(SIGPIPE, SIG_IGN)
        return true
    }()

    /// libmosquitto's version as "major.minor.revision", for logs and status.
    static var version: String {
        var major: CInt = 0
        var minor: CInt = 0
        var revision: CInt = 0
        _ = mosquitto_lib_version(&major, &minor, &revision)
        return "\(major).\(minor).\(revision)"
    }
}
