import ConvoyFormats
import ConvoyJSON
import ConvoyWire

/// A Phoenix frame at both ends: `convoy serve` reads a client's with `PhoenixFrame(text:)`, the Realtime
/// client reads the server's in `RealtimeClient.receive` (its own dispatch on topic and event).
enum FuzzPhoenix {
    static let target = FuzzTarget(
        name: "phoenix",
        summary: "Phoenix frames, server end (PhoenixFrame(text:) written back reads as the same frame) and client end "
            + "(RealtimeClient.receive yields events only for a frame PhoenixFrame reads, each on that frame's topic)"
    ) { bytes in
        var inv = Invariants()
        let text = bytes.text
        let frame = PhoenixFrame(text: text)
        if let frame {
            inv.accepted = true
            let again = PhoenixFrame(text: frame.text)
            inv.expect(again == frame, "written back as \(frame.text.prefix(200)), which reads as \(again?.text.prefix(200) ?? "nothing")")
        }
        let joined = frame?.topic
        let topics = Blocking.run { await RealtimeClient.topicsOfEvents(receiving: text, joined: joined) }
        if frame == nil {
            inv.expect(topics.isEmpty, "the client made \(topics.count) event(s) of a frame the server refuses")
        } else if let frame {
            inv.expect(topics.allSatisfy { $0 == frame.topic }, "an event on \(topics) from a frame on \(frame.topic)")
        }
        return inv
    }
}
