import ConvoySodium

/// The plaintext of a Green Box location update (greenbox-prd.md §4.4):
/// `{"lat":34.052,"lon":-118.243,"ts":1678886400,"acc":5.0}`.
///
/// Convoy adds two fields inside the ciphertext, where only the recipient sees
/// them: `seq`, the sender's sequence number, and `sent_ns`, the intended send
/// time in Unix nanoseconds (the origin of end-to-end latency). Receivers that
/// follow the PRD ignore them; unknown fields from other senders are ignored too.
public struct LocationPayload: Hashable, Sendable {
    /// Latitude in degrees, −90…90.
    public var lat: Double
    /// Longitude in degrees, −180…180.
    public var lon: Double
    /// Capture time, Unix seconds (fractional seconds allowed).
    public var ts: Double
    /// Reported accuracy: the 68 % horizontal radius in metres, ≥ 0.
    public var acc: Double
    /// Sender's sequence number (Convoy extension).
    public var seq: UInt64?
    /// Intended send time, Unix nanoseconds (Convoy extension).
    public var sentNanos: Int64?
    /// A GPS-denied fix from Wi-Fi or cell (Survale's "reduced accuracy" badge): written `"fix":"reduced"`.
    public var reduced = false
    /// Course over ground, degrees clockwise from true north, 0…<360 (Survale's marker rotates with it); nil: not
    /// moving, or not sent.
    public var heading: Double?
    /// Speed over ground, metres a second, ≥ 0; nil: not sent.
    public var speed: Double?
    /// The sender's battery level, 0…1 (a declared app's `{{battery.percent}}`); nil: not sent.
    public var battery: Double?

    public init(lat: Double, lon: Double, ts: Double, acc: Double, seq: UInt64? = nil, sentNanos: Int64? = nil) {
        self.lat = lat
        self.lon = lon
        self.ts = ts
        self.acc = acc
        self.seq = seq
        self.sentNanos = sentNanos
    }

    /// Checks the ranges the PRD implies; names the key at fault.
    public func validate() throws(CryptoError) {
        guard lat.isFinite, (-90...90).contains(lat) else {
            throw .outOfRange("\"lat\" must be a latitude in −90…90, got \(lat)", key: "lat")
        }
        guard lon.isFinite, (-180...180).contains(lon) else {
            throw .outOfRange("\"lon\" must be a longitude in −180…180, got \(lon)", key: "lon")
        }
        guard ts.isFinite, ts >= 0 else {
            throw .outOfRange("\"ts\" must be Unix seconds ≥ 0, got \(ts)", key: "ts")
        }
        guard acc.isFinite, acc >= 0 else {
            throw .outOfRange("\"acc\" must be metres ≥ 0, got \(acc)", key: "acc")
        }
        if let heading, !(heading.isFinite && heading >= 0 && heading < 360) {
            throw .outOfRange("\"heading\" must be degrees in 0…<360, got \(heading)", key: "heading")
        }
        if let speed, !(speed.isFinite && speed >= 0) {
            throw .outOfRange("\"speed\" must be metres a second ≥ 0, got \(speed)", key: "speed")
        }
        if let battery, !(battery.isFinite && (0...1).contains(battery)) {
            throw .outOfRange("\"battery\" must be a level in 0…1, got \(battery)", key: "battery")
        }
    }
}
