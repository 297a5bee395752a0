// The dashboard's fleet map: /api/map every two seconds, drawn as SVG in Web Mercator (so that raster tiles, when
// --map-tiles gives them, line up) with a graticule and a scale bar and no tile at all by default. One marker per
// phone; past `clusterAbove` markers, phones sharing a 16-pixel cell are drawn as one circle with their count. A click
// on a phone lists its friends and the last updates each received from it, and draws those positions (accuracy
// circles, general-location cells, Laplace offsets).
const mapView = { data: null, bounds: null, selected: null, detail: null, clusterAbove: 1500 };
const MW = 960, MH = 560, palette = ["#2563eb", "#ea580c", "#16a34a", "#9333ea", "#dc2626", "#0891b2", "#a16207", "#4b5563"];
const merc = (lat, lon) => { const s = Math.sin(lat * Math.PI / 180); return [(lon + 180) / 360, 0.5 - Math.log((1 + s) / (1 - s)) / (4 * Math.PI)]; };
const unmerc = (x, y) => [Math.atan(Math.sinh(Math.PI * (1 - 2 * y))) * 180 / Math.PI, x * 360 - 180];

function mapPoints(d) {
  const pts = d.phones.filter((p) => p.lat != null).map((p) => [p.lat, p.lon]);
  for (const t of d.tracked) for (const f of t.track) pts.push([f.lat, f.lon]);
  return pts;
}

// The view: every position with a margin, widened to the map's aspect; kept while everything stays inside.
function frame(pts) {
  const xy = pts.map(([a, b]) => merc(a, b));
  if (mapView.bounds && xy.every(([x, y]) => x >= mapView.bounds.x0 && x <= mapView.bounds.x1 && y >= mapView.bounds.y0 && y <= mapView.bounds.y1)) return;
  let x0 = Math.min(...xy.map((p) => p[0])), x1 = Math.max(...xy.map((p) => p[0]));
  let y0 = Math.min(...xy.map((p) => p[1])), y1 = Math.max(...xy.map((p) => p[1]));
  const pad = Math.max(x1 - x0, y1 - y0, 2e-6) * 0.15;
  x0 -= pad; x1 += pad; y0 -= pad; y1 += pad;
  const s = Math.min(MW / (x1 - x0), MH / (y1 - y0));
  const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
  mapView.bounds = { x0: cx - MW / s / 2, x1: cx + MW / s / 2, y0: cy - MH / s / 2, y1: cy + MH / s / 2, s };
}
const px = (lat, lon) => { const [x, y] = merc(lat, lon), b = mapView.bounds; return [(x - b.x0) * b.s, (y - b.y0) * b.s]; };
// Metres to pixels at a latitude.
const metres = (m, lat) => m / (40075016.686 * Math.cos(lat * Math.PI / 180)) * mapView.bounds.s;

function niceMetres(m) { const e = Math.pow(10, Math.floor(Math.log10(m))); for (const k of [5, 2, 1]) if (k * e <= m) return k * e; return e; }

function backdrop() {
  const b = mapView.bounds, [latTop, lonLeft] = unmerc(b.x0, b.y0), [latBottom, lonRight] = unmerc(b.x1, b.y1);
  let out = `<rect width="${MW}" height="${MH}" fill="#f8fafc"/>`;
  const tiles = view.header && view.header.map_tiles;
  if (tiles) {
    const z = Math.max(0, Math.min(19, Math.floor(Math.log2(b.s / 256)))), n = 2 ** z, size = b.s / n;
    for (let tx = Math.floor(b.x0 * n); tx <= Math.floor(b.x1 * n); tx++) for (let ty = Math.floor(b.y0 * n); ty <= Math.floor(b.y1 * n); ty++) {
      if (ty < 0 || ty >= n) continue;
      const href = tiles.replace("{z}", z).replace("{x}", ((tx % n) + n) % n).replace("{y}", ty);
      out += `<image class="tile" href="${esc(href)}" x="${((tx / n - b.x0) * b.s).toFixed(1)}" y="${((ty / n - b.y0) * b.s).toFixed(1)}" width="${size.toFixed(1)}" height="${size.toFixed(1)}"/>`;
    }
  }
  // A graticule at a round step in degrees, about six lines across.
  const span = lonRight - lonLeft, step = niceStep(span / 6);
  for (let lon = Math.ceil(lonLeft / step) * step; lon <= lonRight; lon += step) {
    const x = px(latTop, lon)[0].toFixed(1);
    out += `<line x1="${x}" x2="${x}" y1="0" y2="${MH}" stroke="#cbd5e1" stroke-width="0.6"/><text x="${+x + 2}" y="12">${lon.toFixed(Math.max(0, -Math.floor(Math.log10(step))))}°</text>`;
  }
  for (let lat = Math.ceil(latBottom / step) * step; lat <= latTop; lat += step) {
    const y = px(lat, lonLeft)[1].toFixed(1);
    out += `<line x1="0" x2="${MW}" y1="${y}" y2="${y}" stroke="#cbd5e1" stroke-width="0.6"/><text x="4" y="${+y - 2}">${lat.toFixed(Math.max(0, -Math.floor(Math.log10(step))))}°</text>`;
  }
  // The scale bar: a round distance about a fifth of the width.
  const latMid = (latTop + latBottom) / 2, perPx = 1 / metres(1, latMid), m = niceMetres(perPx * MW / 5), w = m / perPx;
  out += `<g id="scale-bar"><rect x="${MW - w - 24}" y="${MH - 30}" width="${w + 16}" height="22" fill="#fff" opacity="0.8"/>`
    + `<line x1="${MW - w - 16}" x2="${MW - 16}" y1="${MH - 14}" y2="${MH - 14}" stroke="#111827" stroke-width="2"/>`
    + `<text x="${MW - 16 - w / 2}" y="${MH - 18}" text-anchor="middle" style="fill:#111827">${m >= 1000 ? m / 1000 + " km" : m + " m"}</text></g>`;
  return out;
}

const stateStyle = { gps: "", reduced: ' fill-opacity="0.35"', no_fix: ' fill="#fff" stroke-width="1.5"', offline: ' fill="#9ca3af"' };

function drawMap() {
  const d = mapView.data, svg = $("map");
  if (!d) return;
  const pts = mapPoints(d);
  if (!pts.length) { svg.innerHTML = `<text x="${MW / 2}" y="${MH / 2}" text-anchor="middle">no positions yet</text>`; return; }
  frame(pts);
  let out = backdrop();
  // Tracked phones: their true tracks; the stretches without a fix or without network marked.
  for (const t of d.tracked) {
    if (t.track.length < 2) continue;
    const color = palette[t.g % palette.length];
    out += `<polyline class="track" points="${t.track.map((f) => px(f.lat, f.lon).map((v) => v.toFixed(1)).join(",")).join(" ")}" fill="none" stroke="${color}" stroke-opacity="0.45" stroke-width="1.2"/>`;
    for (const f of t.track) if (f.state !== "gps") {
      const [x, y] = px(f.lat, f.lon);
      out += `<circle class="fix-${f.state}" cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="2" fill="${f.state === "offline" ? "#6b7280" : f.state === "no_fix" ? "#dc2626" : "#a16207"}"/>`;
    }
  }
  // What the selected phone's friends received from it.
  if (mapView.detail) out += drawDetail(mapView.detail);
  // Phones: online ones live; after the end, every phone where it was last.
  const shown = d.phones.filter((p) => p.lat != null && (p.online || view.end));
  svg.dataset.phones = shown.length;
  if (shown.length > mapView.clusterAbove) {
    const cells = new Map();
    for (const p of shown) {
      const [x, y] = px(p.lat, p.lon), key = `${Math.floor(x / 16)},${Math.floor(y / 16)}`;
      const c = cells.get(key) || { x: 0, y: 0, n: 0, g: p.g };
      c.x += x; c.y += y; c.n += 1; cells.set(key, c);
    }
    for (const c of cells.values()) {
      const r = Math.min(14, 3 + 2 * Math.log2(c.n));
      out += `<g class="cluster" data-count="${c.n}"><circle cx="${(c.x / c.n).toFixed(1)}" cy="${(c.y / c.n).toFixed(1)}" r="${r.toFixed(1)}" fill="${palette[c.g % palette.length]}" fill-opacity="0.6"/>`
        + (c.n > 1 ? `<text x="${(c.x / c.n).toFixed(1)}" y="${(c.y / c.n + 3).toFixed(1)}" text-anchor="middle" style="fill:#fff;font-size:9px">${c.n}</text>` : "") + `</g>`;
    }
  } else {
    for (const p of shown) {
      const [x, y] = px(p.lat, p.lon), sel = mapView.selected === p.i;
      out += `<circle class="phone" data-i="${p.i}" cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="${sel ? 7 : 4.5}" fill="${palette[p.g % palette.length]}" stroke="${sel ? "#111827" : "#fff"}" stroke-width="${sel ? 2 : 1}"${p.online ? stateStyle[p.state] || "" : ' fill-opacity="0.5"'}><title>phone ${p.i} (${esc(d.groups[p.g] || "")}): ${p.online ? p.state : "off line"}</title></circle>`;
    }
  }
  svg.innerHTML = out;
  $("map-legend").innerHTML = d.groups.map((g, k) => `<span><i style="background:${palette[k % palette.length]}"></i>${esc(g)}</span>`).join("")
    + `<span class="muted">${shown.length > mapView.clusterAbove ? `clustered: ${shown.length} phones in 16-px cells` : `${shown.length} phones`}; ${esc(d.sampling)}</span>`;
}

function drawDetail(det) {
  if (det.lat == null) return "";
  const [ox, oy] = px(det.lat, det.lon);
  let out = "";
  for (const f of det.friends) for (const r of f.last.slice(0, 1)) {
    const [x, y] = px(r.lat, r.lon), rad = Math.max(2, metres(r.acc, r.lat));
    out += `<line x1="${ox.toFixed(1)}" y1="${oy.toFixed(1)}" x2="${x.toFixed(1)}" y2="${y.toFixed(1)}" stroke="#111827" stroke-dasharray="3 3" stroke-width="0.8"/>`;
    out += `<circle class="received" cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="${rad.toFixed(1)}" fill="#f59e0b" fill-opacity="0.15" stroke="#b45309"/>`;
    if (r.mode.startsWith("general:")) {
      const cell = Math.pow(10, -Number(r.mode.split(":")[1])), [ax, ay] = px(r.lat + cell / 2, r.lon - cell / 2), [bx, by] = px(r.lat - cell / 2, r.lon + cell / 2);
      out += `<rect class="general-cell" x="${ax.toFixed(1)}" y="${ay.toFixed(1)}" width="${(bx - ax).toFixed(1)}" height="${(by - ay).toFixed(1)}" fill="none" stroke="#b45309" stroke-dasharray="5 3"/>`;
    }
  }
  return out;
}

function showPhone(det) {
  mapView.detail = det;
  const rows = det.friends.map((f) => {
    const last = f.last.map((r) => `${r.latency_ms == null ? "–" : ms(r.latency_ms) + " ms"} (±${Math.round(r.acc)} m)`).join(", ");
    return `<tr><td>phone ${f.i}</td><td>${esc(f.mode || "–")}</td><td>${last || '<span class="muted">nothing received yet</span>'}</td></tr>`;
  });
  $("phone-panel").innerHTML = `<h3>Phone ${det.i} · ${esc(det.group)} · ${det.online ? "online" : "off line"} · ${det.state}</h3>`
    + `<table id="phone-friends"><thead><tr><th>friend</th><th>shares</th><th>last updates it received (latency, accuracy)</th></tr></thead><tbody>${rows.join("") || '<tr><td colspan="3" class="muted">no friends</td></tr>'}</tbody></table>`;
  drawMap();
}

async function selectPhone(i) {
  mapView.selected = i;
  const r = await fetch(`api/phone/${i}`, { cache: "no-store" });
  if (r.ok) showPhone(await r.json());
}

async function refreshMap() {
  try {
    const r = await fetch("api/map", { cache: "no-store" });
    if (r.status === 204) { $("map-section").hidden = true; return; }
    mapView.data = expandMap(await r.json());
    $("map-section").hidden = false;
    if (mapView.selected != null) { await selectPhone(mapView.selected); } else { drawMap(); }
  } catch (e) { /* the run may have ended and its server gone: keep the last map */ }
}

$("map").addEventListener("click", (e) => { const c = e.target.closest("circle.phone"); if (c) selectPhone(Number(c.dataset.i)); });
function startMap() {
  refreshMap();
  const timer = setInterval(() => { refreshMap(); if (view.end) clearInterval(timer); }, 2000);
}

// /api/map comes compact (arrays, rounded coordinates: FleetMapData+Compact.swift); drawn from objects.
function expandMap(d) {
  const states = ["gps", "reduced", "no_fix", "offline"];
  return {
    groups: d.groups, sampling: d.sampling,
    phones: d.phones.map(([i, g, lat, lon, f]) => ({ i, g, lat, lon, online: (f & 1) === 1, state: states[f >> 1] || "gps" })),
    tracked: d.tracked.map((t) => ({ i: t.i, g: t.g, track: t.track.map(([at, lat, lon, s]) => ({ t: at, lat, lon, state: states[s] || "gps" })) })),
  };
}
