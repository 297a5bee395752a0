internal import CGPS

/// The libgps that the live gpsd source (`GPSDSource`) is built against.
public enum GPSDLibrary {
    /// gpsd's client API version, e.g. "14.0"; the JSON protocol follows it.
    public static var apiVersion: String { "\(convoy_gps_api_major()).\(convoy_gps_api_minor())" }
}
