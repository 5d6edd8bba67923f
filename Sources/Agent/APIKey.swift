import Config
import Posix

/// The API key from the configuration: `auth.api_key`, or the first line of `auth.api_key_file`.
public enum APIKey {
    /// - Returns: the key, or `nil` when none is configured.
    /// - Throws: a one-line message when the key file cannot be read or is empty.
    public static func load(_ auth: AgentConfiguration.Auth) throws(APIKeyError) -> String? {
        if let key = auth.apiKey { return key }
        guard let path = auth.apiKeyFile else { return nil }
        let bytes: [UInt8]
        do {
            bytes = try readFile(atPath: path, limit: 64 << 10)
        } catch {
            throw APIKeyError(message: "\(path): cannot read API key file: \(error)")
        }
        let line = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).first ?? []
        let key = String(decoding: line, as: UTF8.self).trimmingCharacters(in: [" ", "\t", "\r"])
        guard !key.isEmpty else { throw APIKeyError(message: "\(path): the API key file's first line is empty") }
        return key
    }
}

public struct APIKeyError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { self.message }
}

extension String {
    func trimmingCharacters(in set: Set<Character>) -> String {
        var slice = Substring(self)
        while let first = slice.first, set.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}
