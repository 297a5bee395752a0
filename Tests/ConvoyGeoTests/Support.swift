import Foundation
import Testing
@testable import ConvoyGeo

/// ../shared/data beside the repository, where the real captures live.
enum SharedData {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("shared/data")
    static func path(_ relative: String) -> String { root.appendingPathComponent(relative).path }
    static var available: Bool { FileManager.default.fileExists(atPath: path("gpx/cerknicko-jezero.gpx")) }
    static let skipMessage: Comment = "../shared/data is absent: the real-data tests need ../shared beside the checkout"
}

func gpx(_ body: String, version: String = "1.1") -> Data {
    Data("""
    <?xml version="1.0" encoding="UTF-8"?>
    <gpx version="\(version)" creator="test" xmlns="http://www.topografix.com/GPX/\(version == "1.0" ? "1/0" : "1/1")">
    \(body)
    </gpx>
    """.utf8)
}

func straightTrack(points: Int, step: Double = 1, metresPerStep: Double = 10) throws -> TimedTrack {
    let origin = GeoPoint(lat: 46, lon: 14)
    return try TimedTrack(name: "line", times: (0..<points).map { Double($0) * step },
                          points: (0..<points).map { origin.offset(north: Double($0) * metresPerStep, east: 0) })
}
