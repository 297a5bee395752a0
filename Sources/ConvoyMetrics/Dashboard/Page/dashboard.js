// The dashboard page's script: /api/state once, then Server-Sent Events (/api/events); charts drawn as SVG paths.
"use strict";
const $ = (id) => document.getElementById(id);
const view = { header: null, points: [], latest: null, end: null };
const fmt = (n) => n == null ? "–" : (Math.abs(n) >= 1000 ? Math.round(n).toLocaleString("en-US") : String(n));
const ms = (v) => v == null ? "–" : (v >= 100 ? v.toFixed(0) : v.toFixed(1));
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
const duration = (s) => { s = Math.max(0, Math.round(s)); const m = Math.floor(s / 60); return m > 0 ? `${m} min ${s % 60} s` : `${s} s`; };

function rows(tbody, items) {
  tbody.innerHTML = items.length ? items.join("") : `<tr><td colspan="9" class="muted">none</td></tr>`;
}

function value(t) {
  if (t.value == null) return "–";
  if (t.unit === "ms") return ms(t.value) + " ms";
  if (t.unit === "ratio") return (100 * t.value).toFixed(3) + " %";
  return fmt(t.value);
}
const stateText = { passing: "passing so far", failing: "failing so far", no_data: "no data yet", at_end: "at the end", passed: "passed", failed: "failed", not_tested: "not tested in this run" };

// A line chart in `svg` (viewBox 520×200): series of [t, y] with gaps for null. Its legend is the figure's caption's
// (`legend`), never drawn on the plot, where it would sit on the lines.
function chart(svg, series, legend) {
  const W = 520, H = 200, L = 48, R = 8, T = 10, B = 24;
  const pts = series.flatMap((s) => s.points.filter((p) => p[1] != null));
  if (legend) legend.innerHTML = series.map((s) => `<span><i style="background:${s.color}"></i>${esc(s.name)}</span>`).join("");
  if (!pts.length) { svg.innerHTML = `<text x="${W / 2}" y="${H / 2}" text-anchor="middle">nothing yet</text>`; return; }
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const x0 = Math.min(...xs), x1 = Math.max(x0 + 1, ...xs);
  const raw = Math.max(...pts.map((p) => p[1])) || 1, step = niceStep(raw / 4), y1 = Math.ceil(raw / step) * step;
  const px = (x) => L + (W - L - R) * (x - x0) / (x1 - x0), py = (y) => T + (H - T - B) * (1 - y / y1);
  let out = "";
  for (let y = 0; y <= y1 + step / 2; y += step) {
    const yy = py(y).toFixed(1);
    out += `<line x1="${L}" x2="${W - R}" y1="${yy}" y2="${yy}" stroke="#e5e7eb"/><text x="${L - 4}" y="${(+yy + 3).toFixed(1)}" text-anchor="end">${fmt(+y.toPrecision(3))}</text>`;
  }
  for (let i = 0; i <= 4; i++) {
    const x = x0 + (x1 - x0) * i / 4;
    out += `<text x="${px(x).toFixed(1)}" y="${H - 6}" text-anchor="${i === 0 ? "start" : i === 4 ? "end" : "middle"}">${Math.round(x)} s</text>`;
  }
  series.forEach((s, k) => {
    let d = "", pen = false;
    for (const [x, y] of s.points) {
      if (y == null) { pen = false; continue; }
      d += `${pen ? "L" : "M"}${px(x).toFixed(1)} ${py(y).toFixed(1)}`; pen = true;
    }
    out += `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.6"/>`;
  });
  svg.innerHTML = out;
}
function niceStep(v) { const e = Math.pow(10, Math.floor(Math.log10(v))); for (const m of [1, 2, 2.5, 5, 10]) if (m * e >= v) return m * e; return 10 * e; }

function drawCharts() {
  const p = view.points;
  chart($("chart-phones"), [
    { name: "online", color: "#2563eb", points: p.map((q) => [q.t, q.online]) },
    { name: "off Realtime", color: "#dc2626", points: p.map((q) => [q.t, q.off_realtime]) },
  ], $("legend-phones"));
  chart($("chart-throughput"), [
    { name: "out", color: "#ea580c", points: p.map((q) => [q.t, q.out]) },
    { name: "in", color: "#16a34a", points: p.map((q) => [q.t, q.in]) },
  ], $("legend-throughput"));
  // A second's p99 at a few receipts is its slowest one: the chart draws the last 10 s's, and the run's so far.
  chart($("chart-latency"), [
    { name: "p50 10 s", color: "#2563eb", points: p.map((q) => [q.t, q.p50_recent]) },
    { name: "p99 10 s", color: "#9333ea", points: p.map((q) => [q.t, q.p99_recent]) },
    { name: "p99 run", color: "#6b7280", points: p.map((q) => [q.t, q.p99_run]) },
  ], $("legend-latency"));
  // Errors each second by kind: the four kinds with the most in the window, the rest as one.
  const totals = {};
  for (const q of p) for (const [k, n] of Object.entries(q.errors_now || {})) totals[k] = (totals[k] || 0) + n;
  const top = Object.keys(totals).sort((a, b) => totals[b] - totals[a]).slice(0, 4);
  const colors = ["#dc2626", "#ea580c", "#a16207", "#9333ea", "#6b7280"];
  const series = top.map((k, i) => ({ name: k, color: colors[i], points: p.map((q) => [q.t, (q.errors_now || {})[k] || 0]) }));
  if (Object.keys(totals).length > top.length) {
    series.push({ name: "other", color: colors[4], points: p.map((q) => [q.t, Object.entries(q.errors_now || {}).filter(([k]) => !top.includes(k)).reduce((s, e) => s + e[1], 0)]) });
  }
  if (!series.length) series.push({ name: "none", color: "#16a34a", points: p.map((q) => [q.t, 0]) });
  chart($("chart-errors"), series, $("legend-errors"));
}

// The frame's figures of the histogram its tiles are of (`latency`): over the run so far and over the last 10 s.
function mainLatency(f) { return (f.operations || []).find((o) => o.name === f.latency); }

// A chart point from a frame, as the feed keeps them (api/state's points).
function point(f) {
  const m = mainLatency(f);
  return { t: f.t, online: f.online, off_realtime: f.off_realtime, out: f.out, in: f.in, p50: f.p50, p99: f.p99,
           p50_recent: m && m.recent ? m.recent.p50 : null, p99_recent: m && m.recent ? m.recent.p99 : null, p99_run: m ? m.run.p99 : null,
           errors: Object.values(f.errors).reduce((s, n) => s + n, 0), errors_now: f.errors_now || {} };
}

function drawFrame(f) {
  const h = view.header;
  $("phase").textContent = f.phase;
  $("bar").style.width = (100 * f.progress).toFixed(1) + "%";
  $("progress-text").textContent = f.t < 0 || ["onboarding", "pairing", "waiting"].includes(f.phase)
    ? (f.phase === "onboarding" ? `signed up ${f.onboarded} of ${f.devices}` : f.phase)
    : `${duration(f.t)} in, ${f.left > 0 ? duration(f.left) + " left" : "past the planned end (" + f.phase + ")"}`;
  $("online").textContent = fmt(f.online); $("devices").textContent = ` / ${fmt(f.devices)}`;
  $("off-realtime").textContent = fmt(f.off_realtime); $("retry-queued").textContent = fmt(f.retry_queued);
  $("sent").textContent = fmt(f.sent); $("received").textContent = fmt(f.received);
  $("out").textContent = fmt(f.out); $("in").textContent = fmt(f.in);
  const name = (f.latency || "action").replace("_latency", ""), m = mainLatency(f);
  $("latency-label").textContent = `${name} p50 / p99 (last 10 s)`;
  $("p50").textContent = ms(m && m.recent ? m.recent.p50 : null); $("p99").textContent = ms(m && m.recent ? m.recent.p99 : null);
  $("run-latency-label").textContent = `${name} p90 / p99 / p99.9 (run so far)`;
  $("run-p90").textContent = ms(m ? m.run.p90 : null); $("run-p99").textContent = ms(m ? m.run.p99 : null); $("run-p999").textContent = ms(m ? m.run.p99_9 : null);
  rows($("operations").tBodies[0], (f.operations || []).map((o) => {
    const r = o.recent;
    return `<tr data-operation="${esc(o.name)}"><td>${esc(o.name)}</td><td class="n">${fmt(o.run.count)}</td><td class="n">${ms(o.run.p50)}</td><td class="n">${ms(o.run.p90)}</td>`
      + `<td class="n">${ms(o.run.p99)}</td><td class="n">${ms(o.run.p99_9)}</td><td class="n">${r ? fmt(r.count) : "–"}</td><td class="n">${ms(r && r.p50)}</td><td class="n">${ms(r && r.p99)}</td></tr>`;
  }));
  const errors = Object.entries(f.errors).sort((a, b) => b[1] - a[1]), notes = f.error_notes || {};
  $("errors").textContent = fmt(errors.reduce((s, e) => s + e[1], 0));
  rows($("errors-table").tBodies[0], errors.map(([k, n]) => {
    const note = notes[k] || {};
    return `<tr data-kind="${esc(k)}"><td>${esc(k)}</td><td class="n">${fmt(n)}</td><td class="n">${note.t == null ? "–" : Math.round(note.t) + " s"}</td><td class="msg">${note.last ? esc(note.last) : ""}</td></tr>`;
  }));
  rows($("groups").tBodies[0], f.groups.map((g) => `<tr data-group="${esc(g.name)}"><td>${esc(g.name)}</td><td class="n">${fmt(g.devices)}</td><td class="n">${fmt(g.online)}</td><td class="n">${fmt(g.off_realtime)}</td><td class="n">${fmt(g.sent)}</td><td class="n">${fmt(g.received)}</td></tr>`));
  rows($("processes").tBodies[0], (f.processes || []).map((p) => `<tr data-process="${esc(p.name)}"><td>${esc(p.name)}</td><td class="n">${p.cpu.toFixed(0)}</td><td class="n">${fmt(Math.round(p.rss_mib))}</td><td class="n">${fmt(Math.round(p.max_rss_mib))}</td></tr>`));
  rows($("app").tBodies[0], Object.entries(f.app).sort().map(([k, n]) => `<tr><td>${esc(k)}</td><td class="n">${fmt(n)}</td></tr>`));
  if (!view.end) drawThresholds(f.thresholds);
}

// Thresholds failing so far first, in the table and in the banner at the top (where the eye lands first).
function drawThresholds(list) {
  const order = { failing: 0, failed: 0, not_tested: 1, no_data: 2, at_end: 3, passing: 4, passed: 4 };
  list = [...list].sort((a, b) => (order[a.state] ?? 5) - (order[b.state] ?? 5));
  const failing = view.end ? [] : list.filter((t) => t.state === "failing");
  $("failing").hidden = failing.length === 0;
  $("failing-list").innerHTML = failing.map((t) => `<li data-threshold="${esc(t.threshold)}"><code>${esc(t.threshold)}</code>: <span class="figure">${value(t)}</span> so far</li>`).join("");
  rows($("thresholds").tBodies[0], list.map((t) => `<tr data-threshold="${esc(t.threshold)}" data-state="${t.state}"><td>${esc(t.threshold)}</td><td class="n">${value(t)}</td><td class="state ${t.state}">${stateText[t.state] || t.state}${t.why ? ` (why: ${esc(t.why)})` : ""}</td></tr>`));
}

function drawEnd(e) {
  const box = $("end");
  box.hidden = false;
  box.className = e.exit_code === 0 ? "pass" : "fail";
  const verdict = e.exit_code === 0 ? "passed" : e.exit_code === 99 ? "thresholds or checks failed" : (e.complete ? "failed" : "interrupted");
  $("verdict").textContent = `Run ended after ${duration(e.duration_s)}: ${verdict}`;
  $("exit-code").textContent = e.exit_code;
  // What failed first, in report.html's words (a passed run's warnings under their own title).
  const why = e.why || [];
  $("end-why").hidden = why.length === 0;
  $("end-why-title").textContent = e.exit_code === 0 ? "Warnings:" : e.complete ? "Why it failed:" : "Why it is incomplete:";
  $("end-why-list").innerHTML = why.map((w) => `<li>${esc(w).replace(/`([^`]*)`/g, "<code>$1</code>")}</li>`).join("");
  // The run's own latency over the whole run, here and in the live tiles (this second's means nothing now).
  if (e.latency) {
    const name = e.latency.name.replace("_latency", "");
    $("end-latency-label").textContent = `${name} p50 / p99 (whole run)`;
    $("end-p50").textContent = ms(e.latency.p50); $("end-p99").textContent = ms(e.latency.p99);
    $("latency-label").textContent = `${name} p50 / p99 (whole run)`;
    $("p50").textContent = ms(e.latency.p50); $("p99").textContent = ms(e.latency.p99);
    $("run-latency-label").textContent = `${name} p90 / p99 / p99.9 (whole run)`;
    $("run-p90").textContent = ms(e.latency.p90); $("run-p99").textContent = ms(e.latency.p99); $("run-p999").textContent = ms(e.latency.p99_9);
  }
  const a = e.accounting || e.mailbox;
  if (a) {
    // A mailbox app's loss is the backend's alone (not_fetched, as mailbox.loss); its other reasons are listed.
    const lost = e.accounting ? Object.values(a.lost).reduce((s, n) => s + n, 0) : (a.lost.not_fetched || 0);
    $("end-sent").textContent = fmt(a.sent); $("end-delivered").textContent = fmt(a.delivered); $("end-lost").textContent = fmt(lost);
    $("end-sent-label").textContent = e.accounting ? "sent (updates × friends online)" : "messages sent";
    $("end-lost-reasons").textContent = Object.entries(a.lost).map(([k, n]) => `${k} ${fmt(n)}`).join(", ");
  }
  $("report-link").href = e.report; $("results-path").textContent = e.results;
  if (e.shards) $("end-shards").innerHTML = "Shards: " + e.shards.map((s) => `<a href="${esc(s.report)}">${esc(s.url)}</a> exit ${s.exit_code}`).join(" · ");
  $("phase").textContent = "ended"; $("bar").style.width = "100%"; $("stop").hidden = true;
  $("connection").textContent = "";
  drawThresholds(e.thresholds);
  if (typeof refreshMap === "function") refreshMap();
}

function apply(state) {
  view.header = state.header; view.points = state.points || []; view.latest = state.latest; view.end = state.end;
  const h = state.header;
  document.title = `Convoy — ${h.scenario}`;
  $("title").textContent = h.scenario;
  $("subtitle").textContent = `${h.app} · ${fmt(h.devices)} phones · ${h.groups.length} group${h.groups.length === 1 ? "" : "s"} · planned ${duration(h.planned)}`;
  $("window").textContent = h.window;
  $("stop").hidden = !h.control || !!state.end;
  // An app of actions alone is drawn by its actions: made, and those that succeeded.
  const actionsAlone = !h.shares_locations && (h.actions || []).length > 0;
  $("sent-label").textContent = h.shares_locations ? (h.shards ? "sent (across shards: settled at the end)" : "sent (to friends online)")
    : actionsAlone ? "actions made" : "messages sent";
  $("received-label").textContent = actionsAlone ? "actions succeeded" : "received";
  if (view.latest) drawFrame(view.latest);
  drawCharts();
  if (view.end) drawEnd(view.end);
}

async function start() {
  const state = await (await fetch("api/state", { cache: "no-store" })).json();
  apply(state);
  if (view.end) return;
  const events = new EventSource("api/events");
  // "live" only while seconds arrive in turn: a page that fell behind is told what it skipped (event: skipped),
  // says so, and reads the run's state again; one that hears nothing for 3 s says how long.
  view.heard = Date.now();
  events.addEventListener("tick", (m) => {
    const f = JSON.parse(m.data);
    view.latest = f;
    view.heard = Date.now();
    view.points.push(point(f));
    if (view.points.length > view.header.window) view.points.splice(0, view.points.length - view.header.window);
    drawFrame(f); drawCharts();
    if (!(view.behindUntil > Date.now())) setConnection(view.stopping ? "stopping…" : "live", view.stopping ? "stopping" : "");
  });
  events.addEventListener("skipped", (m) => {
    const k = JSON.parse(m.data);
    view.skipped = (view.skipped || 0) + k.skipped;
    view.behindUntil = Date.now() + 3000;
    setConnection("behind: skipped " + view.skipped + " s", "behind");
    fetch("api/state", { cache: "no-store" }).then((r) => r.json()).then((st) => { if (!view.end) { view.points = st.points || view.points; drawCharts(); } })
      .catch(() => {});
  });
  events.addEventListener("end", (m) => { view.end = JSON.parse(m.data); events.close(); setConnection("", ""); drawEnd(view.end); });
  events.onerror = () => { if (!view.end) setConnection("reconnecting…", "behind"); };
  setInterval(() => {
    const quiet = Math.round((Date.now() - view.heard) / 1000);
    if (!view.end && quiet >= 3 && $("connection").textContent !== "reconnecting…") setConnection("behind: no update for " + quiet + " s", "behind");
  }, 1000);
}
// --dashboard-control: a stop, with the token convoy printed at start (the link it printed carries it as #token=…, which
// no request sends; without it the page asks for it).
async function stopRun() {
  const given = new URLSearchParams(location.hash.slice(1)).get("token") || prompt("The token convoy printed at start:");
  if (!given || !confirm("Stop the run? The phones stop and it drains; its results are written, marked incomplete.")) return;
  $("stop").disabled = true;
  const r = await fetch("api/stop", { method: "POST", headers: { Authorization: "Bearer " + given } }).catch((e) => ({ ok: false, statusText: String(e) }));
  if (r.ok) { view.stopping = true; setConnection("stopping…", "stopping"); return; }
  $("stop").disabled = false;
  const why = r.json ? (await r.json().catch(() => ({}))).error : null;
  setConnection("stop refused: " + (why || r.status + " " + r.statusText), "behind");
}
$("stop").addEventListener("click", () => { stopRun(); });

function setConnection(text, state) { $("connection").textContent = text; $("connection").dataset.state = state; }
start().catch((e) => { $("subtitle").textContent = "cannot read the run's state: " + e; });
