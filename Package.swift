// swift-tools-version:6.0
// Convoy: a device simulator and load-testing harness for end-to-end-encrypted
// location-sharing backends. Module map and import rules: docs/architecture.md.
import PackageDescription

/// One list of settings for every target.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "Convoy",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "convoy", targets: ["convoy"]),
        .library(name: "ConvoySodium", targets: ["ConvoySodium"]),
        .library(name: "ConvoyCrypto", targets: ["ConvoyCrypto"]),
        .library(name: "ConvoyGeo", targets: ["ConvoyGeo"]),
        .library(name: "ConvoyWire", targets: ["ConvoyWire"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // C libraries, each wrapped once: only the wrapper module imports it.
        .systemLibrary(
            name: "CSodium", pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CGPS", pkgConfig: "libgps",
            providers: [.apt(["libgps-dev"])]),

        // Leaves. ConvoySodium is the one wrapper of libsodium (keys, boxes, AEAD,
        // signatures, Argon2id); ConvoyCrypto holds the app envelopes on top of it.
        .target(name: "ConvoySodium", dependencies: ["CSodium"], swiftSettings: swiftSettings),
        .target(name: "ConvoyCrypto", dependencies: ["ConvoySodium"], swiftSettings: swiftSettings),
        .target(name: "ConvoyGeo", dependencies: ["CGPS"], swiftSettings: swiftSettings),
        .target(name: "ConvoyWire", dependencies: ["CCurl"], swiftSettings: swiftSettings),

        // The CLI: thin, the only place ArgumentParser lives.
        .executableTarget(
            name: "convoy",
            dependencies: [
                "ConvoySodium", "ConvoyCrypto", "ConvoyGeo", "ConvoyWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings),
        // Micro-benchmarks behind `make bench` (figures in docs/performance.md).
        .executableTarget(
            name: "convoy-bench", dependencies: ["ConvoySodium", "ConvoyCrypto", "ConvoyGeo"],
            swiftSettings: swiftSettings),

        .testTarget(
            name: "ConvoyCryptoTests", dependencies: ["ConvoySodium", "ConvoyCrypto"],
            resources: [.copy("Vectors")], swiftSettings: swiftSettings),
        .testTarget(
            name: "ConvoyGeoTests", dependencies: ["ConvoyGeo"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "ConvoyCLITests", dependencies: ["convoy"],
            swiftSettings: swiftSettings),
    ]
)
