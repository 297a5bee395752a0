// The leanest k6 (v1.1.0) script for city-10k's job, as a new k6 user would write it: the same phones, friends,
// cadence and Realtime subscription as scripts/k6/city.js (read its header for the job), and nothing it does not need.
// scripts/bench-peers runs it beside city.js and Convoy (--k6 city,lean).
//
// Per row received it does one thing: on a postgres_changes INSERT it records commit → receipt (the row's
// commit_timestamp, parsed, against Date.now()) in the one Trend, and counts the row. It does NOT decode the payload
// (city.js: Base64, then JSON.parse, for the end-to-end latency from the intended send time), and it keeps 1 trend and
// 5 counters (city.js: 4 and 11). Per request: one bulk insert whose rows carry the same 200-character payload, made
// once per VU (city.js writes a fresh JSON plaintext and Base64s it for every tick). Per phone: its websocket, a
// heartbeat every 25 s, its timers.
//
// Run: k6 run -e KEYS_FILE=/path/keys.json -e N=100 -e DURATION=2m scripts/k6/lean.js
//   KEYS_FILE, N, DURATION, ARRIVAL_RATE, RAMP_DOWN, DRAIN, RUN_ID, SUMMARY_JSON: as city.js
//   CADENCE    the sharing cadence, seconds: `10..15` (default; city-10k's 10s..15s)
//   FRIENDS    friends a VU shares with: `2..6` (default; city-10k's)
import http from 'k6/http';
import exec from 'k6/execution';
import { WebSocket } from 'k6/experimental/websockets';
import { Counter, Trend } from 'k6/metrics';
import { ANON, BASE, CADENCE_MS, DRAIN_MS, N, TABLE, WS_URL, arrival, commitMs, departure, friendsOf, tag, wait } from './common.js';

export { options, setup } from './common.js';

// A sealed box of city-10k's size (100 bytes of plaintext + 48), Base64: 200 characters, the same for every row.
const PAYLOAD = 'A'.repeat(200);

const commitToReceipt = new Trend('commit_to_receipt', true);
const rowsReceived = new Counter('rows_received');
const rowsPosted = new Counter('rows_posted');
const rowsToOffline = new Counter('rows_to_offline');
const posts = new Counter('posts');
const subscribed = new Counter('subscribed');

export default async function (data) {
  const i = exec.vu.idInTest - 1;
  const { t0, run } = data;
  const leaveAt = departure(t0, i);
  await wait(arrival(t0, i) - Date.now());

  const signup = await http.asyncRequest('POST', `${BASE}/auth/v1/signup`,
    JSON.stringify({ email: `${tag(run, i)}@convoy.test`, password: `pw-${run}-${i}-k6` }),
    { headers: { apikey: ANON, 'Content-Type': 'application/json' }, responseType: 'text' });
  if (signup.status !== 200) return;
  const session = JSON.parse(signup.body);
  const me = session.user.id;
  const auth = { apikey: ANON, Authorization: `Bearer ${session.access_token}` };
  await http.asyncRequest('POST', `${BASE}/rest/v1/users?on_conflict=id`, JSON.stringify({ id: me, public_key: PAYLOAD.slice(0, 44), full_name: tag(run, i) }),
    { headers: { ...auth, 'Content-Type': 'application/json', Prefer: 'return=minimal,resolution=merge-duplicates' } });

  const friends = friendsOf(i).map((j) => ({ name: tag(run, j), id: null, arrives: arrival(t0, j), leaves: departure(t0, j) }));
  const postHeaders = { ...auth, 'Content-Type': 'application/json', Prefer: 'return=minimal' };
  let body = null; // the bulk insert, made again only when a friend's id is learnt
  let tickTimer = null;
  let sharing = true;

  async function tick(intended) {
    if (!sharing) return;
    const next = intended + CADENCE_MS[0] + Math.random() * (CADENCE_MS[1] - CADENCE_MS[0]);
    if (next < leaveAt) tickTimer = setTimeout(() => tick(next), next - Date.now());
    const missing = friends.filter((f) => !f.id);
    if (missing.length > 0) {
      const res = await http.asyncRequest('GET', `${BASE}/rest/v1/users?select=id,full_name&full_name=in.(${missing.map((f) => f.name).join(',')})`, null,
        { headers: auth, responseType: 'text' });
      if (res.status === 200) {
        for (const row of JSON.parse(res.body)) for (const f of missing) if (f.name === row.full_name) f.id = row.id;
        const known = friends.filter((f) => f.id);
        body = known.length ? `[${known.map((f) => `{"sender_id":"${me}","recipient_id":"${f.id}","payload":"${PAYLOAD}"}`).join(',')}]` : null;
      }
    }
    if (!body || !sharing) return;
    const known = friends.filter((f) => f.id);
    for (const f of known) if (intended < f.arrives || intended >= f.leaves) rowsToOffline.add(1);
    const res = await http.asyncRequest('POST', `${BASE}/rest/v1/${TABLE}`, body, { headers: postHeaders });
    posts.add(1);
    if (res.status >= 200 && res.status < 300) rowsPosted.add(known.length);
  }

  let ref = 1;
  let heartbeat = null;
  const ws = new WebSocket(WS_URL);
  ws.onopen = () => {
    ws.send(`{"event":"phx_join","join_ref":"1","payload":{"access_token":"${session.access_token}","config":{"broadcast":{"ack":false,"self":false},`
      + `"postgres_changes":[{"event":"INSERT","filter":"recipient_id=eq.${me}","schema":"public","table":"${TABLE}"}],`
      + `"presence":{"key":""},"private":false}},"ref":"1","topic":"realtime:greenbox:${me}"}`);
    heartbeat = setInterval(() => { ref += 1; ws.send(`{"event":"heartbeat","payload":{},"ref":"${ref}","topic":"phoenix"}`); }, 25000);
  };
  ws.onmessage = (event) => {
    const now = Date.now();
    const frame = JSON.parse(event.data);
    if (frame.event === 'postgres_changes') {
      rowsReceived.add(1);
      const committed = commitMs(frame.payload.data.commit_timestamp);
      if (!isNaN(committed)) commitToReceipt.add(now - committed);
    } else if (frame.event === 'system' && frame.payload.message === 'Subscribed to PostgreSQL') {
      subscribed.add(1);
    }
  };
  ws.onclose = () => {
    clearInterval(heartbeat);
    clearTimeout(tickTimer);
    sharing = false;
  };
  ws.onerror = () => {};

  const first = arrival(t0, i) + Math.random() * CADENCE_MS[1];
  if (first < leaveAt) tickTimer = setTimeout(() => tick(first), first - Date.now());
  setTimeout(() => { sharing = false; clearTimeout(tickTimer); }, leaveAt - Date.now());
  setTimeout(() => { clearInterval(heartbeat); ws.close(); }, leaveAt + DRAIN_MS - Date.now());
}

export function handleSummary(data) {
  const m = (name, stat) => (data.metrics[name] && data.metrics[name].values[stat]) || 0;
  const out = { stdout: `k6 lean: ${N} VUs; posts ${m('posts', 'count')}, rows posted ${m('rows_posted', 'count')}, rows received ${m('rows_received', 'count')};`
    + ` commit→receipt p50 ${m('commit_to_receipt', 'med').toFixed(1)} ms, p99 ${m('commit_to_receipt', 'p(99)').toFixed(1)} ms; subscribed ${m('subscribed', 'count')}\n` };
  if (__ENV.SUMMARY_JSON) out[__ENV.SUMMARY_JSON] = JSON.stringify(data, null, 1);
  return out;
}
