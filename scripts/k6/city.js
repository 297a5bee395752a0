// k6 (v1.1.0) doing the closest job to one Green Box phone of Convoy's
// city-10k (scenarios/city-10k.yaml) against `convoy serve`, so that the two
// load generators can be compared side by side (scripts/bench-peers).
//
// What each VU (one phone) does, as Convoy's phone does it:
//   - arrives at the arrival rate (VU i at t0 + i / ARRIVAL_RATE, in VU
//     order where Convoy shuffles), then signs up (POST /auth/v1/signup
//     {email,password}) and publishes a key row (POST /rest/v1/users
//     ?on_conflict=id, Prefer return=minimal,resolution=merge-duplicates) —
//     Convoy does both, and pairs, for every phone in set-up before the
//     first arrival;
//   - opens ITS OWN Realtime websocket
//     (/realtime/v1/websocket?apikey=…&vsn=1.0.0) and joins
//     `realtime:greenbox:<its user id>` with the frame Convoy's RealtimeClient
//     writes (keys sorted): config broadcast {ack:false,self:false}, presence
//     {key:""}, private false, postgres_changes [INSERT on
//     public.encrypted_locations filter recipient_id=eq.<its id>], and its
//     access token from sign-up; a `heartbeat` on topic `phoenix` every 25 s;
//   - shares on a cadence of 10–15 s (uniform; the first at a random phase
//     in 0–15 s after arriving, open model: the next tick is planned from the
//     intended time of this one, not from when the post returned): ONE bulk
//     insert POST /rest/v1/encrypted_locations, a JSON array of one row per
//     friend {sender_id, recipient_id, payload}, headers apikey,
//     Authorization: Bearer <token>, Content-Type application/json,
//     Prefer: return=minimal;
//   - on every postgres_changes INSERT it reads the row's payload, decodes it
//     and records end-to-end latency (intended send time → read off the
//     socket, on k6's millisecond clock, Date.now()) in the Trend
//     `e2e_latency`, and commit → receipt in `commit_to_receipt`; it counts
//     rows in `rows_received`, bulk inserts in `posts`, rows in `rows_posted`
//     (k6's own `http_reqs` counts every request);
//   - stops sharing during the ramp-down (VU i at steady end + RAMP_DOWN·i/N),
//     keeps receiving for DRAIN more, then closes its websocket.
//
// Friends: VU i shares with the next k VUs in a ring (i+1 … i+k mod N),
// k = 2..6 chosen deterministically from i (Convoy: friends 2..6 from a seeded
// social graph with communities; its friendships are mutual and made with
// invite codes during set-up, which this script does not do: convoy serve's
// default policies let any signed-in user insert rows with sender_id = itself).
// A VU finds its friends' user ids by their `full_name` on `users` (a GET like
// the phone's key look-up, repeated at a tick while a friend is missing).
// Rows to a friend not yet arrived or already gone (the ring's wrap during the
// ramp-down) are also counted in `rows_to_offline`, as Convoy's sent_offline.
//
// What it does NOT do: no crypto at all (the payload is the Base64 of a JSON
// {"lat","lon","ts","acc","seq","sent_ns"} padded to the size of Convoy's
// sealed box, NOT encrypted: PLAINTEXT_BYTES (100) + 48 bytes of
// crypto_box_seal = 148 bytes, 200 Base64 characters; Convoy's city-10k
// payloads are 196-200, 198.3 on average); no GPS, track, noise or
// privacy-fuzzing model (a fixed position per VU); no battery or radio model;
// no background / significant-change skipping (every VU shares every tick,
// where 20-50 % of each city-10k group is in the background and skips most
// ticks); no reconnection, rejoin, catch-up or token refresh; no delivery
// accounting beyond counters (Convoy's sent = delivered + lost); no retention
// checks. One websocket plus k6's own HTTP connection(s) per VU
// (Convoy's bench shares one pool of ≤ 256 HTTP connections).
//
// Run: k6 run -e KEYS_FILE=/path/keys.json -e N=100 -e DURATION=2m scripts/k6/city.js
//   KEYS_FILE  convoy serve --keys-file output ({url, anon_key}); or URL and ANON_KEY
//   N          VUs (phones), default 100
//   DURATION   the steady part after the last arrival (30s, 2m, …), default 2m
//   ARRIVAL_RATE arrivals per second (city-10k: 100), RAMP_DOWN (30s), DRAIN (5s)
//   PLAINTEXT_BYTES the plaintext size the payload stands for (100; +48 sealed, Base64)
//   CADENCE    the sharing cadence, seconds: `10..15` (default; city-10k's 10s..15s)
//   FRIENDS    friends a VU shares with: `2..6` (default; city-10k's)
//   RUN_ID     makes the accounts' emails unique (default: random)
//   SUMMARY_JSON where handleSummary writes k6's summary as JSON (default: none)
import http from 'k6/http';
import encoding from 'k6/encoding';
import exec from 'k6/execution';
import { WebSocket } from 'k6/experimental/websockets';
import { Counter, Trend } from 'k6/metrics';
import { ANON, BASE, CADENCE_MS, DRAIN_MS, N, TABLE, WS_URL, arrival, commitMs, departure, friendsOf, tag, wait } from './common.js';

export { options, setup } from './common.js';

const HEARTBEAT_MS = 25000; // RealtimeClient.heartbeatInterval
const PLAINTEXT_BYTES = parseInt(__ENV.PLAINTEXT_BYTES || '100', 10);
const SEALED_BYTES = PLAINTEXT_BYTES + 48; // crypto_box_seal: ephemeral public key (32) + MAC (16)

const e2eLatency = new Trend('e2e_latency', true);
const commitToReceipt = new Trend('commit_to_receipt', true);
const subscribeTime = new Trend('subscribe', true);
const heartbeatRtt = new Trend('realtime_heartbeat', true);
const rowsReceived = new Counter('rows_received');
const rowsPosted = new Counter('rows_posted');
const rowsToOffline = new Counter('rows_to_offline');
const posts = new Counter('posts');
const postsFailed = new Counter('posts_failed');
const subscribed = new Counter('subscribed');
const joinFailures = new Counter('join_failures');
const signupFailures = new Counter('signup_failures');
const malformed = new Counter('malformed_rows');
const heartbeatTimeouts = new Counter('heartbeat_timeouts');
const wsClosedEarly = new Counter('ws_closed_early');

const uniform = (lo, hi) => lo + Math.random() * (hi - lo);


// The plaintext Convoy seals ({"lat","lon","ts","acc","seq","sent_ns"}), padded to
// SEALED_BYTES (the plaintext and crypto_box_seal's overhead) and Base64'd: the same size on the wire.
function payload(lat, lon, intendedMs, seq) {
  let text = `{"lat":${lat},"lon":${lon},"ts":${(intendedMs / 1000).toFixed(3)},"acc":5.3,"seq":${seq},"sent_ns":${Math.round(intendedMs * 1e6)}`;
  const room = SEALED_BYTES - text.length - 10; // ,"pad":"" and }
  text += room > 0 ? `,"pad":"${'x'.repeat(room)}"}` : '}';
  return encoding.b64encode(text, 'std');
}

export default async function (data) {
  const i = exec.vu.idInTest - 1;
  const { t0, run } = data;
  const arriveAt = arrival(t0, i);
  const leaveAt = departure(t0, i);
  const closeAt = leaveAt + DRAIN_MS;
  await wait(arriveAt - Date.now());

  // Onboarding: sign up, publish a key (Convoy: in set-up; here at arrival).
  const json = { apikey: ANON, 'Content-Type': 'application/json' };
  const signup = await http.asyncRequest('POST', `${BASE}/auth/v1/signup`,
    JSON.stringify({ email: `${tag(run, i)}@convoy.test`, password: `pw-${run}-${i}-k6` }),
    { headers: json, responseType: 'text', tags: { name: 'signup' } });
  if (signup.status !== 200) {
    signupFailures.add(1);
    return;
  }
  const session = JSON.parse(signup.body);
  const token = session.access_token;
  const me = session.user.id;
  const auth = { apikey: ANON, Authorization: `Bearer ${token}` };
  await http.asyncRequest('POST', `${BASE}/rest/v1/users?on_conflict=id`,
    JSON.stringify({ id: me, public_key: encoding.b64encode(`${tag(run, i)}`.padEnd(32, '.').slice(0, 32), 'std'), full_name: tag(run, i) }),
    { headers: { ...auth, 'Content-Type': 'application/json', Prefer: 'return=minimal,resolution=merge-duplicates' }, tags: { name: 'publish_key' } });

  const friends = friendsOf(i).map((j) => ({ index: j, id: null, arrives: arrival(t0, j), leaves: departure(t0, j) }));
  const lat = (52.52 + i * 1e-5).toFixed(7);
  const lon = (13.405 + i * 1e-5).toFixed(7);
  const postHeaders = { ...auth, 'Content-Type': 'application/json', Prefer: 'return=minimal' };
  let seq = 0;
  let tickTimer = null;
  let sharing = true;

  async function lookUpFriends() {
    const missing = friends.filter((f) => !f.id);
    if (missing.length === 0) return;
    const list = missing.map((f) => tag(run, f.index)).join(',');
    const res = await http.asyncRequest('GET', `${BASE}/rest/v1/users?select=id,full_name&full_name=in.(${list})`, null,
      { headers: auth, responseType: 'text', tags: { name: 'friend_lookup' } });
    if (res.status !== 200) return;
    for (const row of JSON.parse(res.body)) {
      const f = friends.find((x) => tag(run, x.index) === row.full_name);
      if (f) f.id = row.id;
    }
  }

  async function tick(intended) {
    if (!sharing) return;
    const next = intended + uniform(CADENCE_MS[0], CADENCE_MS[1]);
    if (next < leaveAt) tickTimer = setTimeout(() => tick(next), next - Date.now());
    await lookUpFriends();
    const known = friends.filter((f) => f.id);
    if (known.length === 0 || !sharing) return;
    seq += 1;
    const rows = known.map((f) => `{"sender_id":"${me}","recipient_id":"${f.id}","payload":"${payload(lat, lon, intended, seq)}"}`);
    for (const f of known) if (intended < f.arrives || intended >= f.leaves) rowsToOffline.add(1);
    const res = await http.asyncRequest('POST', `${BASE}/rest/v1/${TABLE}`, `[${rows.join(',')}]`,
      { headers: postHeaders, tags: { name: 'insert' } });
    posts.add(1);
    if (res.status >= 200 && res.status < 300) rowsPosted.add(known.length);
    else postsFailed.add(1);
  }

  // Realtime: its own websocket, one channel.
  const topic = `realtime:greenbox:${me}`;
  let ref = 0;
  let joinRef = null;
  let pendingHeartbeat = null;
  let heartbeatTimer = null;
  let closing = false;
  const wsStarted = Date.now();
  const ws = new WebSocket(WS_URL);

  ws.onopen = () => {
    ref += 1;
    joinRef = String(ref);
    ws.send(`{"event":"phx_join","join_ref":"${joinRef}","payload":{"access_token":"${token}","config":{"broadcast":{"ack":false,"self":false},`
      + `"postgres_changes":[{"event":"INSERT","filter":"recipient_id=eq.${me}","schema":"public","table":"${TABLE}"}],`
      + `"presence":{"key":""},"private":false}},"ref":"${joinRef}","topic":"${topic}"}`);
    heartbeatTimer = setInterval(() => {
      if (pendingHeartbeat) {
        // Convoy drops the connection here and reconnects; this script only counts it.
        heartbeatTimeouts.add(1);
      }
      ref += 1;
      pendingHeartbeat = { ref: String(ref), sent: Date.now() };
      ws.send(`{"event":"heartbeat","payload":{},"ref":"${ref}","topic":"phoenix"}`);
    }, HEARTBEAT_MS);
  };

  ws.onmessage = (event) => {
    const now = Date.now();
    let frame;
    try {
      frame = JSON.parse(event.data);
    } catch (_) {
      return;
    }
    switch (frame.event) {
      case 'postgres_changes': {
        const change = frame.payload && frame.payload.data;
        if (!change || change.type !== 'INSERT' || change.table !== TABLE) return;
        let sentMs;
        try {
          const plain = JSON.parse(encoding.b64decode(change.record.payload, 'std', 's'));
          sentMs = plain.sent_ns / 1e6;
        } catch (_) {
          malformed.add(1);
          return;
        }
        rowsReceived.add(1);
        e2eLatency.add(now - sentMs);
        const committed = commitMs(change.commit_timestamp);
        if (!isNaN(committed)) commitToReceipt.add(now - committed);
        return;
      }
      case 'phx_reply': {
        const status = frame.payload && frame.payload.status;
        if (frame.topic === 'phoenix') {
          if (pendingHeartbeat && frame.ref === pendingHeartbeat.ref) {
            heartbeatRtt.add(now - pendingHeartbeat.sent);
            pendingHeartbeat = null;
          }
        } else if (frame.ref === joinRef && status !== 'ok') {
          joinFailures.add(1);
        }
        return;
      }
      case 'system':
        if (frame.payload && frame.payload.status === 'ok' && frame.payload.message === 'Subscribed to PostgreSQL') {
          subscribed.add(1);
          subscribeTime.add(now - wsStarted);
        }
        return;
      default:
    }
  };

  ws.onclose = () => {
    if (!closing) wsClosedEarly.add(1);
    if (heartbeatTimer) clearInterval(heartbeatTimer);
    if (tickTimer) clearTimeout(tickTimer);
    sharing = false;
  };
  ws.onerror = () => {};

  // Sharing from a random phase of the cadence (VirtualDevice.connect), to the ramp-down.
  const first = arriveAt + uniform(0, CADENCE_MS[1]);
  if (first < leaveAt) tickTimer = setTimeout(() => tick(first), first - Date.now());
  setTimeout(() => {
    sharing = false;
    if (tickTimer) clearTimeout(tickTimer);
  }, leaveAt - Date.now());
  setTimeout(() => {
    closing = true;
    if (heartbeatTimer) clearInterval(heartbeatTimer);
    ws.close();
  }, closeAt - Date.now());
}

export function handleSummary(data) {
  const m = (name, stat) => (data.metrics[name] && data.metrics[name].values[stat]) || 0;
  const line = `k6 city: ${N} VUs; posts ${m('posts', 'count')} (failed ${m('posts_failed', 'count')}), rows posted ${m('rows_posted', 'count')}`
    + ` (to friends offline ${m('rows_to_offline', 'count')}), rows received ${m('rows_received', 'count')};`
    + ` e2e p50 ${m('e2e_latency', 'med').toFixed(1)} ms, p99 ${m('e2e_latency', 'p(99)').toFixed(1)} ms;`
    + ` subscribed ${m('subscribed', 'count')}, http requests ${m('http_reqs', 'count')}\n`;
  const out = { stdout: line };
  if (__ENV.SUMMARY_JSON) out[__ENV.SUMMARY_JSON] = JSON.stringify(data, null, 1);
  return out;
}
