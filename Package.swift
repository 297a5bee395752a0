// swift-tools-version:6.1
// Convoy: a device simulator and load-testing harness for end-to-end-encrypted
// location-sharing backends. Module map and import rules: docs/architecture.md.
import PackageDescription

/// One list of settings for every target.
// CONVOY_TSAN=1 in the environment (scripts/test-sanitized thread, for make test-tsan): each module names a lock
// ThreadSanitizer sees Mutex (ConvoySync.VisibleMutex). Set here, not with -Xswiftc, so that only Convoy's own
// modules are built again, not every dependency.
let tsan = Context.environment["CONVOY_TSAN"] == "1"
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
] + (tsan ? [.define("CONVOY_TSAN")] : [])

let package = Package(
    name: "Convoy",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "convoy", targets: ["convoy"]),
        .library(name: "ConvoySodium", targets: ["ConvoySodium"]),
        .library(name: "ConvoyCrypto", targets: ["ConvoyCrypto"]),
        .library(name: "ConvoyGeo", targets: ["ConvoyGeo"]),
        .library(name: "ConvoyTime", targets: ["ConvoyTime"]),
        .library(name: "ConvoyFormats", targets: ["ConvoyFormats"]),
        .library(name: "ConvoyWire", targets: ["ConvoyWire"]),
        .library(name: "ConvoyMetrics", targets: ["ConvoyMetrics"]),
        .library(name: "ConvoyFleet", targets: ["ConvoyFleet"]),
        .library(name: "ConvoyServer", targets: ["ConvoyServer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // No traits: with Hummingbird's two defaults (ConfigurationSupport,
        // FullFoundation) Swift 6.3's SwiftPM writes their -D flags in a
        // random order at each plan, so alternating debug and release builds
        // recompiled Hummingbird and HummingbirdCore about every other time
        // (fixed upstream in swiftlang/swift-package-manager#10344, 6.4).
        // Convoy uses neither swift-configuration nor URL-encoded forms.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket", from: "1.6.2"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/vapor/multipart-kit", from: "4.7.1"),
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
        .systemLibrary(
            name: "CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]),

        // Leaves. ConvoySodium is the one wrapper of libsodium (keys, boxes, AEAD,
        // signatures, Argon2id); ConvoyCrypto holds the app envelopes on top of it.
        // X25519 from swift-crypto (BoringSSL); the rest of the sealed box is libsodium's.
        .target(name: "ConvoySodium", dependencies: ["CSodium", .product(name: "Crypto", package: "swift-crypto")],
                swiftSettings: swiftSettings),
        // A strict JSON reader straight from UTF-8 bytes, for the hot paths (Realtime frames, payloads).
        .target(name: "ConvoyJSON", swiftSettings: swiftSettings),
        // A lock ThreadSanitizer sees, named Mutex in each module only under -DCONVOY_TSAN (make test-tsan):
        // Synchronization's Mutex is invisible to TSan, which then reports every access under it.
        .target(name: "ConvoySync", swiftSettings: swiftSettings),
        // Time as every part is given it (the clock protocol, the system and manual clocks, timers on
        // NIO's loops): the phones, the checks and convoy serve take one, so tests move time by hand.
        .target(name: "ConvoyTime", dependencies: ["ConvoySync", .product(name: "NIOCore", package: "swift-nio"),
                                                   .product(name: "NIOPosix", package: "swift-nio")],
                swiftSettings: swiftSettings),
        // The formats both ends speak, one model each (Phoenix frames, QuickPic's JSON, sorted JSON,
        // a JWT's unverified claims): the clients in ConvoyWire and convoy serve share them.
        .target(name: "ConvoyFormats", dependencies: ["ConvoyJSON"], swiftSettings: swiftSettings),
        .target(name: "ConvoyCrypto", dependencies: ["ConvoySodium", "ConvoyJSON", "CZlib"], swiftSettings: swiftSettings),
        .target(name: "ConvoyGeo", dependencies: ["CGPS", "ConvoyJSON", "ConvoySync"], swiftSettings: swiftSettings),
        .target(
            name: "ConvoyMetrics",
            dependencies: ["ConvoySync", .product(name: "Histogram", package: "hdrhistogram-swift"),
                           .product(name: "Prometheus", package: "swift-prometheus")],
            // The live dashboard's page: HTML, CSS and JavaScript as files (DashboardPage puts them together).
            resources: [.copy("Dashboard/Page")],
            swiftSettings: swiftSettings),
        .target(
            name: "ConvoyWire",
            dependencies: [
                "CCurl", "ConvoyJSON", "ConvoyTime", "ConvoyFormats", "ConvoySync",
                // The Realtime client's websocket: NIO's HTTP upgrade and frame codecs, TLS for wss.
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings),

        // Devices, scenarios, the social graph, scheduling (issue 4 onwards).
        .target(
            name: "ConvoyFleet",
            dependencies: ["ConvoySodium", "ConvoyCrypto", "ConvoyJSON", "ConvoyTime", "ConvoyFormats", "ConvoyWire", "ConvoyGeo", "ConvoyMetrics",
                           "ConvoySync", .product(name: "Yams", package: "Yams"), .product(name: "Logging", package: "swift-log")],
            // The battery model's profiles, each number with its source (docs/battery.md).
            resources: [.copy("Battery/BatteryProfiles.yaml")],
            swiftSettings: swiftSettings),

        // The reference backend `convoy serve`: stores and forwards opaque blobs.
        .target(
            name: "ConvoyServer",
            dependencies: [
                "ConvoySodium", "ConvoyTime", "ConvoyFormats", "ConvoyMetrics", "ConvoyJSON", "ConvoySync",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                // Storage uploads as supabase-py sends them (multipart/form-data), parsed as they stream in.
                .product(name: "MultipartKit", package: "multipart-kit"),
            ],
            // The PostgreSQL store's SQL: the platform's, then each app's (its
            // schema and policies), in a folder named after the app (one bundle).
            resources: [.copy("Storage/PostgreSQL"), .copy("Apps/GreenBox/GreenBoxSQL"), .copy("Apps/Survale/SurvaleSQL")],
            swiftSettings: swiftSettings),

        // The CLI: thin, the only place ArgumentParser lives.
        .executableTarget(
            name: "convoy",
            dependencies: [
                "ConvoySodium", "ConvoyCrypto", "ConvoyGeo", "ConvoyTime", "ConvoyFormats", "ConvoyWire", "ConvoyServer", "ConvoyFleet", "ConvoyMetrics",
                "ConvoySync", .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        // Micro-benchmarks behind `make bench` (figures in docs/performance.md).
        .executableTarget(
            name: "convoy-bench",
            dependencies: [
                "ConvoySodium", "ConvoyCrypto", "ConvoyGeo", "ConvoyJSON", "ConvoySync",
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),

        // The fuzz targets: each untrusted input format with its parser's invariants (docs/fuzzing.md), replayed
        // over their corpora by ConvoyFuzzTests and run under libFuzzer by `make fuzz` (convoy-fuzz).
        .target(
            name: "ConvoyFuzz",
            dependencies: ["ConvoySodium", "ConvoyJSON", "ConvoyFormats", "ConvoyWire", "ConvoyGeo", "ConvoyMetrics", "ConvoyFleet", "ConvoyServer",
                           "ConvoySync", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                           .product(name: "NIOWebSocket", package: "swift-nio")],
            swiftSettings: swiftSettings),
        .executableTarget(name: "convoy-fuzz", dependencies: ["ConvoyFuzz"], swiftSettings: swiftSettings),

        // What the tests share: child processes spawned without Foundation's Process (Tests/Support/TestProcess.swift).
        .target(name: "ConvoyTestSupport", dependencies: ["ConvoySync"], path: "Tests/Support", swiftSettings: swiftSettings),
        .testTarget(
            name: "ConvoyCryptoTests", dependencies: ["ConvoySodium", "ConvoyCrypto", "ConvoyTestSupport"],
            resources: [.copy("Vectors")], swiftSettings: swiftSettings),
        .testTarget(
            name: "ConvoyGeoTests", dependencies: ["ConvoyGeo", "ConvoyTestSupport"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "ConvoyServerTests",
            dependencies: ["ConvoyServer", "ConvoySodium", "ConvoyTime", "ConvoyFormats", "ConvoyWire", "ConvoyTestSupport", .product(name: "WSClient", package: "swift-websocket"),
                           .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "GRDB", package: "GRDB.swift"),
                           .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOWebSocket", package: "swift-nio")],
            exclude: ["SQL"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "ConvoyWireTests",
            dependencies: ["ConvoyWire", "ConvoyTime", "ConvoyFormats", "ConvoyJSON", "ConvoyServer", "ConvoySync", .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOWebSocket", package: "swift-nio"),
                           .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket")],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "ConvoyMetricsTests", dependencies: ["ConvoyMetrics"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "ConvoyFleetTests",
            dependencies: ["ConvoyFleet", "ConvoyMetrics", "ConvoyGeo", "ConvoyTime", "ConvoyFormats", "ConvoyWire", "ConvoySodium", "ConvoyServer", "ConvoyTestSupport",
                           "ConvoyCrypto", "ConvoySync", .product(name: "PostgresNIO", package: "postgres-nio")],
            exclude: ["Fixtures"], swiftSettings: swiftSettings),
        .testTarget(
            name: "ConvoyFuzzTests", dependencies: ["ConvoyFuzz", "ConvoyGeo", "ConvoyFleet", "ConvoySodium"],
            exclude: ["Fuzz"], swiftSettings: swiftSettings),
        .testTarget(
            name: "ConvoyCLITests", dependencies: ["convoy", "ConvoyTestSupport", "ConvoySync"],
            swiftSettings: swiftSettings),
    ]
)
