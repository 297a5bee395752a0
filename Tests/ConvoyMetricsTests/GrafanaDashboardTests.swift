import ConvoyMetrics
import Foundation
import Testing

/// deploy/grafana/convoy-run.json names only metrics Convoy exports (a renamed counter would leave a panel empty
/// without a word), and each of its panels asks for something.
@Suite struct GrafanaDashboardTests {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("deploy/grafana/convoy-run.json")

    static func expressions() throws -> [String] {
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        let panels = try #require(json["panels"] as? [[String: Any]])
        return panels.filter { $0["type"] as? String != "row" }.flatMap { p in (p["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
    }

    static func matches(_ pattern: String, in text: String) -> [String] {
        let regex = try! NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { (text as NSString).substring(with: $0.range(at: 1)) }
    }

    @Test func everyMetricItNamesIsOneConvoyExports() throws {
        let exprs = try Self.expressions()
        #expect(exprs.count >= 20)
        var names = Set<String>(), families = Set<String>()
        for e in exprs {
            // Families by pattern (`{__name__=~"convoy_http_errors_[0-9]+_total"}`), and plain names elsewhere.
            families.formUnion(Self.matches(#"__name__=~"(convoy_[a-z0-9_]+?_)[\[.(]"#, in: e))
            let plain = e.replacingOccurrences(of: #"__name__=~"[^"]*""#, with: "", options: .regularExpression)
            names.formUnion(Self.matches(#"\b(convoy_[a-z0-9_]+)\b"#, in: plain))
        }
        #expect(names.count >= 25 && families == ["convoy_http_errors_", "convoy_transport_errors_", "convoy_decrypt_failures_"], "\(families)")
        let unknown = names.filter { !PrometheusExporter.exports($0) }.sorted()
        #expect(unknown.isEmpty, "not exported by Convoy: \(unknown)")
        #expect(families.allSatisfy(PrometheusExporter.exportsFamily))
    }

    @Test func theCheckRefusesWhatConvoyDoesNotExport() {
        #expect(PrometheusExporter.exports("convoy_sent_total") && PrometheusExporter.exports("convoy_e2e_latency_seconds_bucket"))
        #expect(PrometheusExporter.exports("convoy_http_errors_503_total") && PrometheusExporter.exports("convoy_retry_queue"))
        #expect(!PrometheusExporter.exports("convoy_sent") && !PrometheusExporter.exports("convoy_e2e_latency_total"))
        #expect(!PrometheusExporter.exports("convoy_snet_total") && !PrometheusExporter.exports("convoy_http_errors__total") && !PrometheusExporter.exports("sent_total"))
        #expect(!PrometheusExporter.exportsFamily("convoy_sent_"))
    }
}
