/// Where gpsd listens: `HOST:PORT`, or `[IPv6]:PORT`. The port is required
/// (gpsd's default is 2947), so a mistyped address is an error, not a host name.
public struct GPSDAddress: Hashable, Sendable, CustomStringConvertible {
    /// gpsd's registered port.
    public static let defaultPort = 2947

    /// A host name or address, without brackets.
    public let host: String
    public let port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`, `[v6]:PORT`; `key` names the option in errors.
    public init(parsing text: String, key: String = "gpsd") throws(GPSDError) {
        let hint = "give HOST:PORT, e.g. 127.0.0.1:\(Self.defaultPort) or [::1]:\(Self.defaultPort)"
        let hostPart: Substring, portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw .badAddress("'\(text)' has no closing ']'; \(hint)", key: key)
            }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.first == ":" else { throw .badAddress("'\(text)' has no port after ']'; \(hint)", key: key) }
            portPart = rest.dropFirst()
        } else {
            let colons = text.filter { $0 == ":" }.count
            guard colons > 0 else { throw .badAddress("'\(text)' has no port; \(hint)", key: key) }
            guard colons == 1, let colon = text.firstIndex(of: ":") else {
                throw .badAddress("'\(text)': an IPv6 address goes in brackets; \(hint)", key: key)
            }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        }
        guard !hostPart.isEmpty, !hostPart.contains(where: { $0.isWhitespace || $0 == "/" || $0 == "[" || $0 == "]" }) else {
            throw .badAddress("'\(text)' has no usable host; \(hint)", key: key)
        }
        guard portPart.allSatisfy(\.isASCII), let port = Int(portPart), (1...65_535).contains(port) else {
            throw .badAddress("'\(text)': the port must be a number from 1 to 65535; \(hint)", key: key)
        }
        self.init(host: String(hostPart), port: port)
    }

    /// `host:port`, with brackets around an IPv6 address.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
