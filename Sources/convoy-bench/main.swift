import ConvoyCrypto
import ConvoyGeo
import ConvoyJSON
import ConvoySodium
import Foundation

// `make bench`: micro-benchmarks of Convoy's per-update hot path, and with
// `server`, the reference backend under load. Figures and the machine they came
// from are in docs/performance.md.

// `server [--database postgres://…]`: SQLite unless a PostgreSQL URL is given.
if CommandLine.arguments.dropFirst().first == "server" {
    var bench = ServerBench()
    let args = Array(CommandLine.arguments.dropFirst(2))
    if let i = args.firstIndex(of: "--database"), i + 1 < args.count { bench.database = args[i + 1] }
    try await bench.run()
    exit(0)
}

func row(_ r: Bench.Result) -> String {
    func us(_ ns: Double) -> String { String(format: "%8.2f", ns / 1000) }
    return "\(r.name.padding(toLength: 44, withPad: " ", startingAt: 0)) \(us(r.medianNanos)) µs  (min \(us(r.minNanos)), max \(us(r.maxNanos)), n=\(r.operations))"
}

print("convoy-bench: median µs per operation (\(ProcessInfo.processInfo.activeProcessorCount) cores, libsodium \(CryptoLibrary.sodiumVersion))")
var results: [Bench.Result] = []

// Crypto: the floor for harness CPU per delivered update.
let alice = try BoxKeyPair()
let payload = LocationPayload(lat: 46.051_123, lon: 14.505_987, ts: 1_767_600_000, acc: 4.5, seq: 12, sentNanos: 1_767_600_000_123_456_789)
let plain = try payload.jsonBytes()
let sealedRaw = try SealedBox.seal(plain, to: alice.publicKey)
let envelope = try GreenBoxEnvelope.seal(payload, to: alice.publicKey)
let n = 2000
results.append(try Bench.measure("sealed box: seal (\(plain.count) B JSON)", batch: n) {
    for _ in 0..<n { blackHole(try SealedBox.seal(plain, to: alice.publicKey)) }
})
results.append(try Bench.measure("sealed box: open", batch: n) {
    for _ in 0..<n { blackHole(try SealedBox.open(sealedRaw, with: alice)) }
})
// The same boxes with libsodium's own X25519 (ref10/sandy2x) instead of BoringSSL's.
results.append(Bench.measure("  libsodium crypto_box_seal", batch: n) {
    for _ in 0..<n { blackHole(SealedBox.sealedByLibsodium(plain, to: alice.publicKey)) }
})
results.append(Bench.measure("  libsodium crypto_box_seal_open", batch: n) {
    for _ in 0..<n { blackHole(SealedBox.openedByLibsodium(sealedRaw, with: alice)) }
})
// Each X25519 operation alone, from each library (the sealed box uses one of each per message).
let bobBox = try BoxKeyPair()
let scalar = [UInt8](repeating: 0x5A, count: 32)
results.append(Bench.measure("  X25519 key pair, BoringSSL", batch: n) { for _ in 0..<n { blackHole(X25519Pieces.boringKeyPair()) } })
results.append(Bench.measure("  X25519 base point, libsodium", batch: n) { for _ in 0..<n { blackHole(X25519Pieces.sodiumBase(scalar)) } })
results.append(Bench.measure("  X25519 shared point, BoringSSL", batch: n) { for _ in 0..<n { blackHole(X25519Pieces.boringShared(alice, bobBox.publicKey)) } })
results.append(Bench.measure("  X25519 shared point, libsodium", batch: n) { for _ in 0..<n { blackHole(X25519Pieces.sodiumShared(alice, bobBox.publicKey)) } })
results.append(try Bench.measure("Green Box seal (JSON + seal + Base64)", batch: n) {
    for _ in 0..<n { blackHole(try GreenBoxEnvelope.seal(payload, to: alice.publicKey)) }
})
results.append(try Bench.measure("Green Box open (Base64 + open + JSON check)", batch: n) {
    for _ in 0..<n { blackHole(try GreenBoxEnvelope.open(envelope, with: alice)) }
})
let bob = try SigningKeyPair()
let photo = [UInt8](repeating: 7, count: 64 * 1024)
let blob = try QuickPicEnvelope.seal(photo, to: alice.publicKey, signedBy: bob)
results.append(try Bench.measure("QuickPic seal, 64 KiB", batch: 200) {
    for _ in 0..<200 { blackHole(try QuickPicEnvelope.seal(photo, to: alice.publicKey, signedBy: bob)) }
})
results.append(try Bench.measure("QuickPic open, 64 KiB (verify + decrypt)", batch: 200) {
    for _ in 0..<200 { blackHole(try QuickPicEnvelope.open(blob, with: alice, from: bob.publicKey)) }
})

// A phone's commonest Realtime frame, a change as convoy serve writes one (sorted keys, `/` escaped as
// JSONValue writes it), read by the client's strict scanner (what `RealtimeClient` reads every frame with).
var changeFrame = #"{"event":"postgres_changes","payload":{"data":{"columns":[{"name":"created_at","type":"timestamptz"},"#
    + #"{"name":"id","type":"int8"},{"name":"payload","type":"text"},{"name":"recipient_id","type":"uuid"},"#
    + #"{"name":"sender_id","type":"uuid"}],"commit_timestamp":"2026-11-28T10:00:00.123Z","errors":null,"record":{"#
    + #""created_at":"2026-11-28T10:00:00.123+00:00","id":123456,"payload":""#
    + envelope.replacingOccurrences(of: "/", with: "\\/")
    + #"","recipient_id":"7d0c5f4e-8a51-4b8e-9a43-0f2b3c4d5e6f","sender_id":"1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9"},"#
    + #""schema":"public","table":"encrypted_locations","type":"INSERT"},"ids":[123456]},"ref":null,"#
    + #""topic":"realtime:greenbox:7d0c5f4e-8a51-4b8e-9a43-0f2b3c4d5e6f"}"#
let frameRounds = 20_000
results.append(Bench.measure("Realtime change frame, JSONScanner (\(changeFrame.utf8.count) B)", batch: frameRounds) {
    for _ in 0..<frameRounds { blackHole(changeFrame.withUTF8 { JSONScanner.parse($0) }) }
})

// Geo: what each device does per tick before sealing.
let track = try GPXImport.tracks(from: try SyntheticTrack.generate(
    SynthesisOptions(profile: .drive, duration: 3600, seed: 1, origin: GeoPoint(lat: 40.4, lon: -3.7))))[0].track
var replayer = try Replayer(track: track, mode: .pingPong, offset: 17, speedFactor: 1.1)
var noise = try NoiseGenerator(model: AccuracyModel(), seed: 1)
var rng = SeededGenerator(seed: 1)
let m = 100_000
var clockT = 0.0
results.append(Bench.measure("replay fix (sequential, 1 s steps)", batch: m) {
    for _ in 0..<m {
        clockT += 1
        blackHole(replayer.fix(at: clockT))
    }
})
var noiseT = 0.0
results.append(Bench.measure("accuracy noise (Gauss-Markov) per fix", batch: m) {
    for _ in 0..<m {
        noiseT += 1
        blackHole(noise.apply(to: GeoPoint(lat: 40.4, lon: -3.7), at: noiseT, hdop: 1))
    }
})
results.append(Bench.measure("privacy fuzz: general (2 decimals)", batch: m) {
    for _ in 0..<m { blackHole(PrivacyFuzz.general.apply(to: GeoPoint(lat: 40.4, lon: -3.7), accuracy: 5, using: &rng)) }
})
results.append(Bench.measure("privacy fuzz: planar Laplace", batch: m) {
    for _ in 0..<m {
        blackHole(PrivacyFuzz.geoIndistinguishable(epsilon: 0.01).apply(to: GeoPoint(lat: 40.4, lon: -3.7), accuracy: 5, using: &rng))
    }
})

// Files.
let gpxText = Data(GPXWriter.string(try SyntheticTrack.generate(
    SynthesisOptions(profile: .walk, duration: 3600, seed: 2, origin: GeoPoint(lat: 46, lon: 14)))).utf8)
let parse = try Bench.measure("GPX read, 3,601 points (\(gpxText.count / 1024) KiB)", batch: 1, rounds: 5) {
    blackHole(try GPXReader.read(data: gpxText))
}
results.append(parse)

for r in results { print(row(r)) }
let sealOpen = (results[0].medianNanos + results[1].medianNanos) / 1000
print(String(format: "\ncrypto floor per delivered update (Convoy's seal + open): %.1f µs", sealOpen))
print(String(format: "GPX read throughput: %.0f points/s", 3601 / (parse.medianNanos / 1e9)))
