#if canImport(Glibc)
import Glibc
#endif
import Posix

/// Writes the exact truth of one device to `DIR/<serial>/`: beats, every sample as a decoder will reconstruct
/// it at its intended (wall-clock) time, with the packet's flow counter, session and fate.
///
/// Fate (`status`): 0 delivered, 1 lost (never sent; the counter still advanced), 2 corrupted (sent garbled).
///
/// A heart-rate strap (SPEC §16) also gets `rr.csv` (every RR interval a notification carried: the beat that ends
/// it, the interval in 1/1024 s and in seconds) and `hrs.csv` (every Heart Rate Measurement notification: its time,
/// HR, contact and RR count); its E4 sample files stay empty.
final class TruthRecorder {
    let sessions: TruthFile
    let beats: TruthFile
    let bvp: TruthFile
    let acc: TruthFile
    let gsr: TruthFile
    let temperature: TruthFile
    let battery: TruthFile
    let tags: TruthFile
    /// A strap's RR intervals and notifications; `nil` for an E4.
    let rr: TruthFile?
    let hrs: TruthFile?

    /// Creates the directory and the files.
    ///
    /// - Throws: ``Errno`` when the directory or a file cannot be created.
    init(directory: String, serial: String, kind: SimulatedDeviceKind = .e4) throws(Errno) {
        let dir = directory + "/" + serial
        for path in [directory, dir] where mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw Errno.current
        }
        self.sessions = try TruthFile(path: dir + "/sessions.csv", header: "session,start_time,address")
        self.beats = try TruthFile(path: dir + "/beats.csv", header: "foot_time,peak_time,ibi,session")
        self.bvp = try TruthFile(path: dir + "/bvp.csv", header: "t,value,green,red,counter,session,status")
        self.acc = try TruthFile(path: dir + "/acc.csv", header: "t,x,y,z,counter,session,status")
        self.gsr = try TruthFile(path: dir + "/gsr.csv", header: "t,code,microsiemens,counter,session,status")
        self.temperature = try TruthFile(path: dir + "/temp.csv", header: "t,raw,celsius,counter,session,status")
        self.battery = try TruthFile(path: dir + "/battery.csv", header: "t,percent,session,status")
        self.tags = try TruthFile(path: dir + "/tags.csv", header: "t,session,status")
        if kind == .hrs {
            self.rr = try TruthFile(path: dir + "/rr.csv", header: "t,rr_1024,ibi,session,status")
            self.hrs = try TruthFile(path: dir + "/hrs.csv", header: "t,hr,contact,rr_count,session,status")
        } else {
            self.rr = nil
            self.hrs = nil
        }
    }

    var files: [TruthFile] { [self.sessions, self.beats, self.bvp, self.acc, self.gsr, self.temperature,
                              self.battery, self.tags] + [self.rr, self.hrs].compactMap { $0 } }

    func flush() {
        for file in self.files { file.flush() }
    }

    /// Formats a wall-clock time with microsecond resolution (Swift's shortest `Double` form may show fewer).
    static func time(_ seconds: Double) -> String {
        let micros = Int64((seconds * 1_000_000).rounded())
        let whole = micros / 1_000_000
        let fraction = String(micros % 1_000_000)
        return String(whole) + "." + String(repeating: "0", count: 6 - fraction.count) + fraction
    }
}
