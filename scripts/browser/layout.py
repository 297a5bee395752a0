"""Whether the dashboard's page is laid out as a person needs to read it at a glance, at a given width.

    layout_problems(driver, width) -> [str]

Resizes the page area to `width` (height kept), lets the page redraw, and lists what is wrong:
  - two boxes that overlap (tiles, charts, tables and their columns, the map and its panel, the end box, the
    failing banner), compared pairwise where neither holds the other;
  - a box wider than the page, or a table wider than its column (it is drawn over whatever is beside it);
  - a figure that wraps onto a second line (a tile's value, a table's number cell, a threshold's value);
  - a chart's legend drawn inside its plot (on its lines).
Empty: nothing wrong.
"""

PROBLEMS = r"""
const boxSel = ["header", "#failing", "#end", ".tiles > .tile", ".charts > figure", ".columns > div", "#map", "#phone-panel",
                ".columns table", "#operations", "footer"];
const boxes = [];
for (const sel of boxSel) {
  for (const el of document.querySelectorAll(sel)) {
    if (el.hidden || el.closest("[hidden]") || el.offsetParent === null) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    boxes.push({ el, sel, r });
  }
}
const name = (b) => b.el.id ? "#" + b.el.id : b.sel + "(" + (b.el.querySelector("h2,.label,figcaption")?.textContent || "").trim().slice(0, 30) + ")";
const out = [];
const slack = 0.5;
for (let i = 0; i < boxes.length; i++) {
  for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    if (a.el.contains(b.el) || b.el.contains(a.el)) continue;
    const w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
    const h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
    if (w > slack && h > slack) out.push(`${name(a)} and ${name(b)} overlap (${w.toFixed(0)}×${h.toFixed(0)} px)`);
  }
}
const page = document.documentElement.clientWidth;
for (const b of boxes) if (b.r.right > page + slack) out.push(`${name(b)} runs past the page's right edge (${b.r.right.toFixed(0)} > ${page})`);
for (const t of document.querySelectorAll(".columns table")) {
  const col = t.parentElement;
  if (t.closest("[hidden]")) continue;
  if (t.getBoundingClientRect().right > col.getBoundingClientRect().right + slack && getComputedStyle(col).overflowX === "visible")
    out.push(`#${t.id} is wider than its column and spills over (${t.getBoundingClientRect().width.toFixed(0)} > ${col.getBoundingClientRect().width.toFixed(0)} px)`);
}
// Lines of text in an element: its fragments' rectangles, grouped where they share height (a smaller unit beside a figure
// is on the same line; a wrapped figure's second line lies wholly below the first).
const lines = (el) => {
  const range = document.createRange();
  range.selectNodeContents(el);
  const rects = [...range.getClientRects()].filter((q) => q.width > 0 && q.height > 0).sort((a, b) => a.top - b.top);
  let count = 0, bottom = -Infinity;
  for (const q of rects) {
    if (q.top >= bottom - 1) { count += 1; bottom = q.bottom; } else { bottom = Math.max(bottom, q.bottom); }
  }
  return count;
};
for (const el of document.querySelectorAll(".tile .value, td.n, #failing li .figure")) {
  if (el.closest("[hidden]") || el.offsetParent === null || !el.textContent.trim()) continue;
  if (lines(el) > 1) out.push(`“${el.textContent.trim()}” wraps (${el.closest("[id]")?.id || "?"})`);
}
// A chart's plot holds its lines and its axes' numbers; a series' name there sits on the lines.
for (const svg of document.querySelectorAll(".charts svg")) {
  const words = [...svg.querySelectorAll("text")].map((t) => t.textContent.trim()).filter((s) => !/^(-?[\d,.]+( s)?|ms|nothing yet)$/.test(s));
  if (words.length) out.push(`#${svg.id} draws its legend on its plot (${words.join(", ")})`);
}
return out;
"""


def layout_problems(driver, width):
    """What is wrong with the page's layout at `width` CSS pixels (the page area's height is kept)."""
    from chromium import fit_viewport
    height = driver.execute_script("return innerHeight")
    fit_viewport(driver, width, height)
    # Two frames: the resize's layout, then whatever the page redraws on it.
    driver.execute_script("return new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)))")
    return driver.execute_script(PROBLEMS)
