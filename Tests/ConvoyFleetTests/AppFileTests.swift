@testable import ConvoyFleet
import ConvoyCrypto
import ConvoySodium
import ConvoyWire
import ConvoyJSON
import Foundation
import Logging
import Testing

/// A declared app's file (docs/apps.md): the shipped Green Box reads as the built-in one's names, and every mistake
/// is an error at its file, line and column.
@Suite struct AppFileTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let greenBox = root.appendingPathComponent("examples/apps/greenbox-prd.yaml").path

    @Test func theShippedGreenBoxDeclaresThePRDsNames() throws {
        let spec = try AppFile.load(Self.greenBox)
        #expect(spec.name == "greenbox-prd" && spec.serves == "greenbox")
        #expect(spec.keys.table == "users" && spec.keys.column == "public_key" && spec.keys.encoding == .base64 && !spec.keys.perDevice)
        #expect(spec.links.duringRun && spec.links.requestSteps.count == 1 && spec.links.acceptSteps.count == 1)
        #expect(spec.links.steps[1].write.kind == .update(table: "friendships", where: "id=eq.{{saved.link}}"))
        #expect(spec.posting.table == "encrypted_locations" && !spec.posting.bulk && !spec.posting.phoneStamps)
        #expect(spec.receiving.filter == "recipient_id=eq.{{me.id}}" && spec.retention.column == "created_at")
        let app = DeclaredApp(spec)
        #expect(app.subscription(for: "u1").topic == "realtime:greenbox:u1")
        #expect(app.subscription(for: "u1").bindings.map(\.filter) == ["recipient_id=eq.u1", "user_id_2=eq.u1", "requested_by=eq.u1"])
    }

    /// Each mistake, where it is: (text replaced, by, line, column, words in the message).
    static let mistakes: [(String, String, Int, Int, String)] = [
        ("  per: user\n", "  per: user\n  colour: blue\n", 17, 3, "unknown key \"colour\""),
        ("  encoding: base64\n", "  encoding: base32\n", 15, 13, "\"base32\" is not one of base64, hex"),
        ("  requests: per_recipient\n", "  requests: [per_recipient]\n", 39, 13, "expected a value, found a list"),
        ("payload: \"{{sealed}}\"", "payload: \"{{seal}}\"", 42, 76, "unknown placeholder {{seal}}; did you mean {{sealed}}?"),
        ("ts: \"{{time.s}}\"", "ts: \"at {{time.s}}\"", 44, 49, "one placeholder alone"),
        ("      save: {link: id}\n", "", 28, 5, "save the friendship's id as link"),
        ("  time: server\n", "  time: phone\n", 42, 8, "the row writes created_at"),
        ("shape: pairwise", "shape: mailbox", 7, 8, "shape is pairwise (sealed rows to each friend) or group"),
        ("  during: run\n", "  during: run\n  sharing: follow\n", 24, 12, "sharing is mutual (both friends share), inviter"),
    ]

    @Test(arguments: 0..<mistakes.count) func aMistakeIsAnErrorAtItsLineAndColumn(_ i: Int) throws {
        let (old, new, line, column, words) = Self.mistakes[i]
        let text = try String(contentsOfFile: Self.greenBox, encoding: .utf8)
        #expect(text.contains(old))
        do {
            _ = try AppFile.parse(text.replacingOccurrences(of: old, with: new), file: "mine.yaml")
            Issue.record("\(new) was accepted")
        } catch {
            #expect(error.file == "mine.yaml" && error.line == line && error.column == column && error.description.contains(words), "\(error)")
        }
    }

    @Test func aScenarioNamesItsAppByFileRelativeToItself() throws {
        let scenario = try ScenarioFile.load(Self.root.appendingPathComponent("scenarios/greenbox-prd-declared.yaml").path)
        let declared = try #require(scenario.app.declared)
        #expect(declared.name == "greenbox-prd" && scenario.app.profile is DeclaredApp && scenario.app.profile?.pairsDuringRun == true)
        do {
            _ = try ScenarioFile.parse("name: x\napp: {file: nowhere.yaml}\ngroups: [{name: a, count: 2}]\n", file: "/tmp/s.yaml")
            Issue.record("a missing app file was accepted")
        } catch {
            #expect(error.line == 2 && error.description.contains("no app file /tmp/nowhere.yaml"), "\(error)")
        }
    }
}

/// What a declared app cannot run sharded is refused in its own words (the file to change), not Green Box's modes.
@Suite struct DeclaredShardTests {
    static func refusal(_ app: String) throws -> String {
        try refusal(FleetRunTests.scenario(devices: 4, extra: "app: { file: \(app) }"))
    }

    static func refusal(_ scenario: Scenario) throws -> String {
        let configuration = FleetRun.Configuration(scenario: scenario, scenarioFile: "s.yaml", target: SupabaseTarget(url: "http://127.0.0.1", anonKey: ""),
                                                   runID: "x", shard: Shard(index: 0, count: 2, devices: scenario.deviceCount, seed: 1, secret: Array("s".utf8)))
        do {
            try FleetRun(configuration, engine: try HTTPEngine(), logger: .quiet).checkRunnable()
            return "runnable"
        } catch {
            return "\(error)"
        }
    }

    @Test func aDeclaredAppIsToldWhatToChangeInItsFile() throws {
        // Green Box's PRD file links during the run, which shards now run; it is refused only for its plaintext, which has no seq.
        let during = try Self.refusal(AppFileTests.greenBox)
        #expect(during.contains("add \"{{seq}}\" and \"{{sent_ns}}\" to the plaintext in \(AppFileTests.greenBox)"), "\(during)")
        #expect(try Self.refusal(DeclaredBeaconTests.beacon) == "runnable", "Beacon pairs in set-up and seals seq and sent_ns")
        // An app of actions alone seals nothing: no plaintext to add a seq to, so nothing to refuse.
        let actions = try ScenarioFile.load(AppFileTests.root.appendingPathComponent("scenarios/naarscars.yaml").path)
        #expect(try Self.refusal(actions) == "runnable")
        let text = try String(contentsOfFile: DeclaredBeaconTests.beacon, encoding: .utf8)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("beacon-noseq-\(UUID().uuidString).yaml").path
        try text.replacingOccurrences(of: "  trace: {seq: \"{{seq}}\", sent_ns: \"{{sent_ns}}\"}\n", with: "")
            .replacingOccurrences(of: "sql: ../migrations/beacon", with: "sql: \(AppFileTests.root.path)/examples/migrations/beacon")
            .write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let noSeq = try Self.refusal(file)
        #expect(noSeq.contains("add \"{{seq}}\" and \"{{sent_ns}}\" to the plaintext in \(file)"), "\(noSeq)")
    }
}

/// A declared plaintext: written by its template, read back by the same one, in the units it names.
@Suite struct DeclaredPlaintextTests {
    static let update = LocationPayload(lat: 34.052, lon: -118.243, ts: 1_678_886_400.734, acc: 5, seq: 3, sentNanos: 1_678_886_400_734_000_000)

    @Test func greenBoxsTemplateWritesTheBuiltInPRDPlaintextByteForByte() throws {
        let spec = try AppFile.load(AppFileTests.greenBox)
        let declared = DeclaredPlaintext(spec.plaintext)
        let builtIn = GreenBoxApp(payload: .prd)
        #expect(declared.plaintext(of: Self.update) == builtIn.plaintext(of: Self.update))
        #expect(try declared.bytes(declared.plaintext(of: Self.update)) == builtIn.plaintext(of: Self.update).jsonBytes())
    }

    @Test func nestingArraysAndUnitsRoundTrip() throws {
        let template = try YAMLDocument.root("""
            v: 2
            at: "{{time.iso}}"
            where: {coords: ["{{lon}}", "{{lat}}"], radius_m: "{{acc}}"}
            motion: {heading_deg: "{{heading}}", mps: "{{speed}}"}
            convoy: {seq: "{{seq}}"}
            """, file: "t.yaml", empty: "").jsonTemplate { _ in }
        let plain = DeclaredPlaintext(template)
        var moving = Self.update
        moving.heading = 90.5
        let p = plain.plaintext(of: moving)
        #expect(p.ts == 1_678_886_400.734 && p.seq == 3 && p.sentNanos == nil && p.heading == 90.5 && p.speed == nil)
        let bytes = try plain.bytes(p)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text == #"{"v":2,"at":"2023-03-15T13:20:00.734Z","where":{"coords":[-118.243,34.052],"radius_m":5},"motion":{"heading_deg":90.5},"convoy":{"seq":3}}"#,
                "speed is left out: the phone has none")
        #expect(try plain.read(bytes) == p)
        // Milliseconds, and a field missing.
        let ms = DeclaredPlaintext(.object([.init("t", .string("{{time.ms}}")), .init("la", .string("{{lat}}")), .init("lo", .string("{{lon}}")),
                                            .init("a", .string("{{acc}}"))]))
        #expect(String(decoding: try ms.bytes(ms.plaintext(of: Self.update)), as: UTF8.self) == #"{"t":1678886400734,"la":34.052,"lo":-118.243,"a":5}"#)
        #expect(throws: CryptoError.self) { try ms.read(Array(#"{"t":1678886400734,"la":34.052,"a":5}"#.utf8)) }
        #expect(throws: CryptoError.self) { try ms.read(Array(#"{"t":"soon","la":34.052,"lo":1,"a":5}"#.utf8)) }
    }

    /// The battery, as a whole percent or a fraction in hundredths: written as the unit says, read back the same.
    @Test func batteryLevelInEitherUnitRoundTrips() throws {
        var charged = Self.update
        charged.battery = 0.5734
        for (name, written) in [("battery.percent", #""b":57"#), ("battery.fraction", #""b":0.57"#)] {
            let plain = DeclaredPlaintext(.object([.init("t", .string("{{time.ms}}")), .init("la", .string("{{lat}}")), .init("lo", .string("{{lon}}")),
                                                   .init("a", .string("{{acc}}")), .init("b", .string("{{\(name)}}"))]))
            let p = plain.plaintext(of: charged)
            #expect(p.battery == 0.57, "\(name)")
            let bytes = try plain.bytes(p)
            #expect(String(decoding: bytes, as: UTF8.self).contains(written), "\(name)")
            #expect(try plain.read(bytes) == p)
            // Optional: a phone without a battery model leaves it out, and a level out of range is refused.
            #expect(!String(decoding: try plain.bytes(plain.plaintext(of: Self.update)), as: UTF8.self).contains("\"b\""))
            #expect(throws: CryptoError.self) { try plain.read(Array(#"{"t":1,"la":1,"lo":1,"a":5,"b":140}"#.utf8)) }
        }
        // An app whose plaintext does not carry it drops it.
        #expect(DeclaredPlaintext(try AppFile.load(AppFileTests.greenBox).plaintext).plaintext(of: charged).battery == nil)
    }
}

/// The one template language: a placeholder alone keeps its value's type, text is a string, built-ins everywhere.
@Suite struct TemplateTests {
    @Test func aPlaceholderAloneKeepsItsTypeAndTextIsAString() throws {
        let t = JSONTemplate.object([.init("n", .string("{{x}}")), .init("s", .string("x={{x}}")), .init("q", .string("{{name}}")),
                                     .init("h", .string("{{heading}}"))])
        let values: [String: JSONValue] = ["x": .number("1.5"), "name": .string("a/b\"c")]
        let text = String(decoding: try t.render({ values[$0] }, omit: { $0 == "heading" }), as: UTF8.self)
        #expect(text == #"{"n":1.5,"s":"x=1.5","q":"a/b\"c"}"#)
        #expect(throws: Template.Unavailable.self) { try t.render { values[$0] } }
        #expect(Template.whole("{{ lat }}") == "lat" && Template.whole("{{a}}{{b}}") == nil && Template.whole("x{{a}}") == nil)
        #expect(try Template.fill("{{big:3B}}-{{saved.code}}") { $0 == "saved.code" ? "K7" : nil } == "AAA-K7")
    }

    @Test func saveKeepsAFieldOfTheFirstRow() {
        let saved = JSONTemplate.saved([("link", "id"), ("code", "result.code")], from: Array(#"[{"id":42,"result":{"code":"AB"}},{"id":43}]"#.utf8))
        #expect(saved == ["saved.link": "42", "saved.code": "AB"])
    }
}
