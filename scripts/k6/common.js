// What scripts/k6/city.js and lean.js share: the job's settings from the environment, the options, set-up and
// schedule, each VU's friends, and a row's commit_timestamp.

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

// The job's settings, read once in each script's init context (see city.js's header for each variable).
const keys = __ENV.KEYS_FILE ? JSON.parse(open(__ENV.KEYS_FILE)) : { url: __ENV.URL, anon_key: __ENV.ANON_KEY };
if (!keys.url || !keys.anon_key) throw new Error('give KEYS_FILE (convoy serve --keys-file) or URL and ANON_KEY');
export const BASE = keys.url.replace(/\/$/, '');
export const ANON = keys.anon_key;
export const WS_URL = `${BASE.replace(/^http/, 'ws')}/realtime/v1/websocket?apikey=${ANON}&vsn=1.0.0`;
export const N = parseInt(__ENV.N || '100', 10);
export const RATE = parseFloat(__ENV.ARRIVAL_RATE || '100');
export const STEADY_MS = seconds(__ENV.DURATION, '2m') * 1000;
export const RAMP_DOWN_MS = seconds(__ENV.RAMP_DOWN, '30s') * 1000;
export const DRAIN_MS = seconds(__ENV.DRAIN, '5s') * 1000;
export const CADENCE_MS = range(__ENV.CADENCE, '10..15').map((x) => x * 1000);
export const FRIENDS = range(__ENV.FRIENDS, '2..6').map(Math.round);
export const TABLE = 'encrypted_locations';
export const LEAD_MS = 2000; // t0 is this far after setup, so every VU has the same clock origin
const TOTAL_S = Math.ceil((LEAD_MS + (N * 1000) / RATE + STEADY_MS + RAMP_DOWN_MS + DRAIN_MS) / 1000);

// One iteration per VU, each VU a phone.
export const options = {
  scenarios: {
    phones: { executor: 'per-vu-iterations', vus: N, iterations: 1, maxDuration: `${TOTAL_S + 60}s`, gracefulStop: '30s' },
  },
  setupTimeout: '30s',
  discardResponseBodies: true,
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(99)', 'count'],
};

export function setup() {
  return { t0: Date.now() + LEAD_MS, run: __ENV.RUN_ID || `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}` };
}

export const wait = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
export const tag = (run, i) => `k6-${run}-${i}`;

// The schedule every VU can compute for every other: when it arrives and when it leaves.
export const arrival = (t0, i) => t0 + (i * 1000) / RATE;
export const departure = (t0, i) => t0 + (N * 1000) / RATE + STEADY_MS + (RAMP_DOWN_MS * i) / N;

// VU i shares with the next k VUs in a ring, k in FRIENDS chosen deterministically from i.
export function friendsOf(i) {
  const k = FRIENDS[0] + ((i * 2654435761) % (FRIENDS[1] - FRIENDS[0] + 1));
  const out = [];
  for (let d = 1; d <= k; d++) {
    const j = (i + d) % N;
    if (j !== i && !out.includes(j)) out.push(j);
  }
  return out;
}
