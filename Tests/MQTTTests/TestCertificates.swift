import Foundation
import TestSupport

/// A CA, a broker certificate for 127.0.0.1 and a client certificate signed by it, plus an unrelated CA, made
/// with `openssl` once per test process.
struct TestCertificates: Sendable {
    let directory: String
    var caFile: String { self.directory + "/ca.crt" }
    var otherCAFile: String { self.directory + "/other-ca.crt" }
    var serverCert: String { self.directory + "/server.crt" }
    var serverKey: String { self.directory + "/server.key" }
    var clientCert: String { self.directory + "/client.crt" }
    var clientKey: String { self.directory + "/client.key" }

    /// The shared set, generated on first use.
    static let shared: Result<TestCertificates, HarnessError> = {
        do {
            return .success(try TestCertificates.generate())
        } catch let error as HarnessError {
            return .failure(error)
        } catch {
            return .failure(HarnessError("\(error)"))
        }
    }()

    static func generate() throws -> TestCertificates {
        let directory = try makeTemporaryDirectory("certs")
        let log = directory + "/openssl.log"
        let openssl = "/usr/bin/openssl"
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for name in ["ca", "other-ca"] {
            try runToCompletion([openssl, "req", "-x509"] + key + [
                "-keyout", "\(directory)/\(name).key", "-out", "\(directory)/\(name).crt",
                "-days", "2", "-subj", "/CN=EmpaLink test \(name)",
            ], output: log)
        }
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(
            toFile: directory + "/server.ext", atomically: true, encoding: .utf8)
        for (name, extensions) in [("server", ["-extfile", "\(directory)/server.ext"]), ("client", [])] {
            try runToCompletion([openssl, "req", "-new"] + key + [
                "-keyout", "\(directory)/\(name).key", "-out", "\(directory)/\(name).csr",
                "-subj", "/CN=EmpaLink test \(name)",
            ], output: log)
            try runToCompletion([openssl, "x509", "-req", "-in", "\(directory)/\(name).csr",
                            "-CA", "\(directory)/ca.crt", "-CAkey", "\(directory)/ca.key", "-CAcreateserial",
                            "-days", "2", "-out", "\(directory)/\(name).crt"] + extensions, output: log)
        }
        return TestCertificates(directory: directory)
    }
}
