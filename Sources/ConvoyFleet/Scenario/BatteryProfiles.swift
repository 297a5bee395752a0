import Foundation

/// The battery profiles a run or `convoy battery` can use: the shipped
/// `BatteryProfiles.yaml`, optionally overridden and extended by a user's file
/// of the same shape (docs/battery.md).
public struct BatteryProfiles: Sendable, Equatable {
    public var battery: BatteryCell
    public var gps: GPSProfile
    public var cpu: CPUProfile
    /// Radio profiles by network name.
    public var networks: [String: RadioProfile]
    /// Network names in file order (shipped ones first).
    public var networkNames: [String]

    public init(battery: BatteryCell = BatteryCell(), gps: GPSProfile = GPSProfile(modes: [:]), cpu: CPUProfile = CPUProfile(activePower: 0),
                networks: [String: RadioProfile] = [:], networkNames: [String] = []) {
        (self.battery, self.gps, self.cpu, self.networks, self.networkNames) = (battery, gps, cpu, networks, networkNames)
    }

    /// The profile for `network`, or nil when no file names it.
    public func profile(_ network: String) -> BatteryProfile? {
        networks[network].map { BatteryProfile(name: network, radio: $0, gps: gps, cpu: cpu, battery: battery) }
    }

    /// Where the shipped profiles are (a resource of ConvoyFleet).
    public static var shippedURL: URL? { Bundle.module.url(forResource: "BatteryProfiles", withExtension: "yaml") }

    /// The shipped profiles (`lte`, `3g`, `wifi`).
    public static func shipped() throws(ScenarioError) -> BatteryProfiles {
        guard let url = shippedURL else {
            throw ScenarioError(file: "BatteryProfiles.yaml", line: 0, column: 0, path: "",
                                message: "the shipped battery profiles are missing from ConvoyFleet's resources")
        }
        return try BatteryProfilesFile.load(url.path)
    }

    /// The shipped profiles with a user's file over them (`path` nil: the shipped ones alone).
    public static func load(overridingWith path: String?) throws(ScenarioError) -> BatteryProfiles {
        let base = try shipped()
        guard let path else { return base }
        return try BatteryProfilesFile.load(path, over: base)
    }
}
