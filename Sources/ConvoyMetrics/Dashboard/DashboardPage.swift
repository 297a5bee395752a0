/// The live dashboard's page: one self-contained HTML file (its style and script inline, charts drawn as
/// SVG by the script, nothing fetched from anywhere but the run itself). It reads `/api/state` once, then
/// listens to `/api/events`; when the run ends it keeps the last state and links to report.html.
/// Elements a test or a person may look for carry ids (`#online`, `#sent`, `#end-delivered`…) and the
/// thresholds' rows `data-threshold` and `data-state`.
public enum DashboardPage {
    public static var html: String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Convoy — live</title>
        <style>\(css)</style></head>
        <body>
        <header>
          <div><h1 id="title">Convoy</h1><div id="subtitle" class="muted">connecting…</div></div>
          <div class="status"><span id="phase" class="badge">–</span><span id="connection" class="muted"></span></div>
        </header>
        <div class="progress"><div id="bar"></div></div>
        <div id="progress-text" class="muted small"></div>
        <section id="end" hidden>
          <h2 id="verdict">Run ended</h2>
          <div id="end-why" hidden><strong id="end-why-title">Why it failed:</strong><ul id="end-why-list"></ul></div>
          <div class="tiles">
            <div class="tile"><div class="label">exit code</div><div class="value" id="exit-code">–</div></div>
            <div class="tile"><div class="label" id="end-sent-label">sent</div><div class="value" id="end-sent">–</div></div>
            <div class="tile"><div class="label">delivered</div><div class="value" id="end-delivered">–</div></div>
            <div class="tile"><div class="label">lost</div><div class="value" id="end-lost">–</div></div>
            <div class="tile"><div class="label" id="end-latency-label">e2e p50 / p99 (whole run)</div><div class="value"><span id="end-p50">–</span> / <span id="end-p99">–</span> <span class="unit">ms</span></div></div>
          </div>
          <div id="end-lost-reasons" class="muted small"></div>
          <p><a id="report-link" href="report.html">report.html</a> <span class="muted small" id="results-path"></span></p>
          <p id="end-shards" class="small"></p>
        </section>
        <section class="tiles">
          <div class="tile"><div class="label">phones online</div><div class="value"><span id="online">–</span><span class="of" id="devices"></span></div></div>
          <div class="tile"><div class="label">off Realtime</div><div class="value" id="off-realtime">–</div></div>
          <div class="tile"><div class="label">in retry</div><div class="value" id="retry-queued">–</div></div>
          <div class="tile"><div class="label" id="sent-label">sent</div><div class="value" id="sent">–</div></div>
          <div class="tile" title="received also counts what friends that were not yet online caught up on: it may exceed sent by up to sent_offline"><div class="label" id="received-label">received</div><div class="value" id="received">–</div></div>
          <div class="tile"><div class="label">out / in per s</div><div class="value"><span id="out">–</span> / <span id="in">–</span></div></div>
          <div class="tile"><div class="label" id="latency-label">e2e p50 / p99</div><div class="value"><span id="p50">–</span> / <span id="p99">–</span> <span class="unit">ms</span></div></div>
          <div class="tile"><div class="label">errors</div><div class="value" id="errors">–</div></div>
        </section>
        <section class="charts">
          <figure><figcaption>Phones</figcaption><svg id="chart-phones" viewBox="0 0 520 200"></svg></figure>
          <figure><figcaption>Throughput, per second</figcaption><svg id="chart-throughput" viewBox="0 0 520 200"></svg></figure>
          <figure><figcaption id="chart-latency-caption">Latency, ms (this second's p50 and p99)</figcaption><svg id="chart-latency" viewBox="0 0 520 200"></svg></figure>
        </section>
        <section id="map-section" hidden>
          <h2>Fleet map</h2>
          <div class="map-row">
            <svg id="map" viewBox="0 0 960 560" data-phones="0"></svg>
            <div id="phone-panel" class="muted small">Click a phone: its friends, how it shares with each, and the last updates each received from it (drawn on the map: accuracy circles, general-location cells, offsets from where it truly is).</div>
          </div>
          <div id="map-legend" class="legend small"></div>
          <p class="muted small">Lines: tracked phones' true tracks; dots on them: no fix (red), Wi-Fi or cell in a GPS-denied zone (amber), no network (grey). Hollow marker: no fix now; faint: reduced accuracy; grey: in a tunnel.</p>
        </section>
        <section class="columns">
          <div><h2>Thresholds</h2><table id="thresholds"><thead><tr><th>threshold</th><th>now</th><th>state</th></tr></thead><tbody></tbody></table>
            <p class="muted small">“so far”: judged on what the run has measured until now; “at the end”: only the final accounting can say.</p></div>
          <div><h2>Groups</h2><table id="groups"><thead><tr><th>group</th><th>phones</th><th>online</th><th>off Realtime</th><th title="by the sender's group">sent</th><th title="by the recipient's group">received</th></tr></thead><tbody></tbody></table><div class="muted small">sent: by the sender's group; received: by the recipient's</div></div>
          <div><h2>Errors by kind</h2><table id="errors-table"><thead><tr><th>kind</th><th>count</th></tr></thead><tbody></tbody></table></div>
          <div><h2 id="app-title">The app</h2><table id="app"><thead><tr><th>counter</th><th>so far</th></tr></thead><tbody></tbody></table></div>
        </section>
        <footer class="muted small">Convoy's live view: one frame a second over Server-Sent Events; the charts keep the last <span id="window">–</span> s.</footer>
        <script>\(DashboardScript.js)
        \(DashboardMapScript.js)
        startMap();</script>
        </body></html>
        """
    }

    static let css = """
        :root { --fg: #111827; --muted: #6b7280; --line: #e5e7eb; --ok: #16a34a; --bad: #dc2626; --wait: #a16207; }
        * { box-sizing: border-box; }
        body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); margin: 0 auto; padding: 16px 24px; max-width: 1400px; }
        header { display: flex; justify-content: space-between; align-items: flex-end; gap: 16px; }
        h1 { font-size: 20px; margin: 0; } h2 { font-size: 15px; margin: 16px 0 6px; }
        .muted { color: var(--muted); } .small { font-size: 12px; }
        #connection[data-state="behind"] { color: #b45309; font-weight: 600; }
        .badge { display: inline-block; padding: 2px 8px; border-radius: 10px; background: #eef2ff; font-weight: 600; margin-right: 8px; }
        .progress { height: 8px; background: var(--line); border-radius: 4px; margin: 10px 0 4px; overflow: hidden; }
        #bar { height: 100%; width: 0; background: #2563eb; transition: width .4s; }
        .tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 10px; margin: 12px 0; }
        .tile { border: 1px solid var(--line); border-radius: 8px; padding: 8px 10px; }
        .tile .label { color: var(--muted); font-size: 12px; } .tile .value { font-size: 20px; font-weight: 600; font-variant-numeric: tabular-nums; }
        .of, .unit { color: var(--muted); font-size: 13px; font-weight: 400; }
        .charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(380px, 1fr)); gap: 12px; }
        figure { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: 6px; }
        figcaption { font-weight: 600; font-size: 13px; margin: 0 0 4px 4px; }
        svg { width: 100%; height: auto; display: block; } svg text { font-size: 10px; fill: var(--muted); }
        .columns { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 0 24px; }
        table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
        th, td { text-align: left; padding: 3px 6px; border-bottom: 1px solid var(--line); } td.n, th.n { text-align: right; }
        .state { font-weight: 600; } .passing, .passed { color: var(--ok); } .failing, .failed, .not_tested { color: var(--bad); } .at_end, .no_data { color: var(--wait); }
        #end { border: 2px solid var(--line); border-radius: 8px; padding: 4px 14px; margin: 12px 0; }
        #end.pass { border-color: var(--ok); } #end.fail { border-color: var(--bad); }
        footer { margin-top: 20px; }
        .map-row { display: grid; grid-template-columns: minmax(0, 3fr) minmax(260px, 1fr); gap: 12px; align-items: start; }
        #map { border: 1px solid var(--line); border-radius: 8px; cursor: pointer; } #map text { font-size: 10px; fill: #64748b; }
        #phone-panel h3 { font-size: 13px; margin: 0 0 6px; color: var(--fg); } #phone-panel td { font-size: 12px; color: var(--fg); }
        .legend span { margin-right: 14px; } .legend i { display: inline-block; width: 10px; height: 10px; border-radius: 5px; margin-right: 4px; vertical-align: -1px; }
        """
}
