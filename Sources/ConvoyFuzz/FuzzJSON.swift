import ConvoyJSON

/// `JSONScanner`, which reads every REST body and Realtime frame on both sides of the wire.
enum FuzzJSON {
    static let target = FuzzTarget(
        name: "json",
        summary: "JSONScanner: a value read is written back (JSONValue.text) to text that reads as an equal value; "
            + "what reads at depth 64 reads the same at 512 (Realtime's depth)"
    ) { bytes in
        var inv = Invariants()
        let shallow = JSONScanner.parse(bytes.bindMemory(to: UInt8.self))
        let deep = JSONScanner.parse(bytes.bindMemory(to: UInt8.self), maxDepth: JSONScanner.foundationDepth)
        if let shallow {
            inv.expect(deep == shallow, "read at depth 64 but not the same at 512")
        }
        if let value = deep {
            inv.accepted = true
            let written = value.text
            let again = JSONScanner.parse(written, maxDepth: JSONScanner.foundationDepth)
            inv.expect(again == value, "written back as \(written.prefix(200)), which reads as \(again.map { $0.text.prefix(200) } ?? "nothing")")
        }
        return inv
    }
}
