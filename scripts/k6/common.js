// What scripts/k6/city.js and lean.js share: reading durations and ranges from the environment, and a row's
// commit_timestamp.

// `90`, `90s`, `2m`, `1m30s`, `500ms` as seconds.
export function seconds(text, fallback) {
  const s = String(text || fallback);
  if (!/^(\d+(\.\d+)?(ms|s|m|h)?)+$/.test(s)) throw new Error(`not a duration: ${s}`);
  let total = 0;
  for (const m of s.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)?/g)) total += parseFloat(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2] || 's'];
  return total;
}

// `2..6` as [2, 6].
export function range(text, fallback) {
  const m = /^(\d+(?:\.\d+)?)\.\.(\d+(?:\.\d+)?)$/.exec(String(text || fallback));
  if (!m || parseFloat(m[1]) > parseFloat(m[2])) throw new Error(`not a range like 2..6: ${text}`);
  return [parseFloat(m[1]), parseFloat(m[2])];
}

// `2026-01-05T08:00:00.123456Z` / `+00:00`, as Unix ms (Date.parse does not read six fractional digits everywhere).
export function commitMs(text) {
  const m = /^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?/.exec(text || '');
  if (!m) return NaN;
  const frac = m[7] ? parseFloat(`0.${m[7]}`) * 1000 : 0;
  return Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]) + frac;
}
