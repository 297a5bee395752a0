import ConvoyWire
import Foundation

extension ProbeRunner {
    /// A timing step: `tries` rounds of one `a` request then one `b` request (interleaved, so a drift of the
    /// machine's load falls on both alike), each round trip as libcurl timed it; judged on the two medians.
    func runTiming(_ step: ProbeStep, _ timing: TimingProbe, _ context: ProbeContext, _ outcome: inout ProbeOutcome) async {
        var a: [Double] = [], b: [Double] = []
        var last: HTTPResponse?
        let complete = await rounds(timing.tries, timing.a, timing.b, step, context, &outcome) { side, response, _ in
            if side == 0 { a.append(response.timing.total * 1000) } else { b.append(response.timing.total * 1000); last = response }
        }
        guard complete, let last else { return }
        var facts = ProbeFacts(last)
        facts.timing = (Self.median(a), Self.median(b), timing.tries)
        let request = (try? context.build(timing.b[0])) ?? HTTPRequest(method: "POST", url: context.target.url, headers: [], body: nil)
        judge(step, facts, context, &outcome) {
            context.evidence(step, request, status: last.status, body: last.body, kind: $0, detail: $1)
        }
    }

    /// `count` rounds of one request of `a` then one of `b` (each list taken in turn), interleaved so that a drift
    /// of the machine's load falls on both alike; `each` sees every answer (0: a's side, 1: b's). False when a
    /// request could not be made or sent (noted in `outcome`): the step decides nothing then.
    func rounds(_ count: Int, _ a: [ProbeRequest], _ b: [ProbeRequest], _ step: ProbeStep, _ context: ProbeContext,
                _ outcome: inout ProbeOutcome, each: (Int, HTTPResponse, HTTPRequest) -> Void) async -> Bool {
        for i in 0..<count {
            for (side, list) in [(0, a), (1, b)] {
                switch await send(list[i % list.count], context) {
                case .sent(let response, let sent):
                    each(side, response, sent)
                case .skipped(let why):
                    outcome.notes.append("skipped \(step.source): \(why)")
                    return false
                case .failed(let why):
                    outcome.tried += 1
                    outcome.notes.append("inconclusive \(step.source): \(why)")
                    return false
                }
            }
        }
        return true
    }

    static func median(_ xs: [Double]) -> Double {
        guard !xs.isEmpty else { return 0 }
        let s = xs.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }
}
