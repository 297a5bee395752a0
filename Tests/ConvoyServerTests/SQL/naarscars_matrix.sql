-- Naar's Cars' RLS matrix, run inside PostgreSQL against a database with
-- Storage/PostgreSQL/000_platform.sql and examples/migrations/naarscars/*.sql
-- applied (`convoy serve --database … --migrations examples/migrations/naarscars`
-- does both; so does psql -f on each in name order):
--   psql "$URL" -q -f Tests/ConvoyServerTests/SQL/naarscars_matrix.sql
-- It asserts what naarscars-security.md's policies (§2.1–2.15, verbatim in
-- 002_policies.sql) ACTUALLY do, holes included, acting as users exactly as
-- `convoy serve` does (SET LOCAL ROLE + request.jwt.claims). Every passing
-- check prints `NOTICE:  check ok: …`; the first failing one stops the script.
-- Each section seeds its rows and rolls back, so the database is left as found.
-- Filters matter: an UPDATE or DELETE with a WHERE (PostgREST's ?id=eq.…) or a
-- RETURNING also applies the table's SELECT policy, one without applies only
-- its UPDATE/DELETE policy; the checks say which they send.
\set ON_ERROR_STOP 1
SET client_min_messages = notice;

SET client_min_messages = warning;
DROP SCHEMA IF EXISTS naarscars_test CASCADE;
SET client_min_messages = notice;
CREATE SCHEMA naarscars_test;
GRANT USAGE ON SCHEMA naarscars_test TO PUBLIC;
-- anon, service, super (the migrations' owner, no RLS), or a user id.
CREATE FUNCTION naarscars_test.act_as(who text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF who = 'anon' THEN
    PERFORM set_config('request.jwt.claims', '{"role":"anon"}', true);
    PERFORM set_config('role', 'anon', true);
  ELSIF who = 'service' THEN
    PERFORM set_config('request.jwt.claims', '{"role":"service_role"}', true);
    PERFORM set_config('role', 'service_role', true);
  ELSIF who = 'super' THEN
    PERFORM set_config('role', 'none', true);
    PERFORM set_config('request.jwt.claims', '{}', true);
  ELSE
    PERFORM set_config('request.jwt.claims', json_build_object('sub', who, 'role', 'authenticated')::text, true);
    PERFORM set_config('role', 'authenticated', true);
  END IF;
END $$;
-- `query` must return one number; it must equal `expected`.
CREATE FUNCTION naarscars_test.expect(name text, query text, expected bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE got bigint;
BEGIN
  EXECUTE query INTO got;
  IF got IS DISTINCT FROM expected THEN RAISE EXCEPTION 'FAILED %: got %, expected % (%)', name, got, expected, query; END IF;
  RAISE NOTICE 'check ok: %', name;
END $$;
-- `statement` (INSERT/UPDATE/DELETE, no RETURNING) must touch `expected` rows.
CREATE FUNCTION naarscars_test.expect_rows(name text, statement text, expected bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE got bigint;
BEGIN
  EXECUTE statement;
  GET DIAGNOSTICS got = ROW_COUNT;
  IF got IS DISTINCT FROM expected THEN RAISE EXCEPTION 'FAILED %: % rows, expected % (%)', name, got, expected, statement; END IF;
  RAISE NOTICE 'check ok: %', name;
END $$;
-- `statement` must fail with SQLSTATE `code` (and, if given, exactly `message`).
CREATE FUNCTION naarscars_test.expect_error(name text, statement text, code text, message text DEFAULT NULL) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    EXECUTE statement;
  EXCEPTION WHEN OTHERS THEN
    IF SQLSTATE = code AND (message IS NULL OR SQLERRM = message) THEN RAISE NOTICE 'check ok: %', name; RETURN; END IF;
    RAISE EXCEPTION 'FAILED %: got % (%), expected % (%) (%)', name, SQLSTATE, SQLERRM, code, coalesce(message, '…'), statement;
  END;
  RAISE EXCEPTION 'FAILED %: succeeded, expected % (%)', name, code, statement;
END $$;

-- The cast: Alice (a) and Bob (b) approved members, Dora (m) an approved admin,
-- Mallory (u) signed up and unapproved (profile, approved = false), Nick (n)
-- signed up without a profile yet. Alice's ride r1 (unclaimed) and favor f1;
-- Bob's ride r2, claimed by Mallory; Alice's conversation c1 with Bob and one
-- message; a notification, a push token, a review, a town-hall post and a
-- question of Alice's; Alice's invite codes NC22222222 (unused) and
-- NC33333333 (used by Bob). Made as the owner, inside each section.
\set a '''aaaaaaaa-0000-4000-8000-00000000000a'''
\set b '''bbbbbbbb-0000-4000-8000-00000000000b'''
\set m '''dddddddd-0000-4000-8000-00000000000d'''
\set u '''eeeeeeee-0000-4000-8000-00000000000e'''
\set n '''ffffffff-0000-4000-8000-00000000000f'''
\set r1 '''11111111-0000-4000-8000-000000000001'''
\set r2 '''11111111-0000-4000-8000-000000000002'''
\set f1 '''22222222-0000-4000-8000-000000000001'''
\set c1 '''33333333-0000-4000-8000-000000000001'''
CREATE FUNCTION naarscars_test.fixture() RETURNS void LANGUAGE sql AS $$
  INSERT INTO auth.users (id, email) VALUES
    ('aaaaaaaa-0000-4000-8000-00000000000a', 'alice@nc'), ('bbbbbbbb-0000-4000-8000-00000000000b', 'bob@nc'),
    ('dddddddd-0000-4000-8000-00000000000d', 'dora@nc'), ('eeeeeeee-0000-4000-8000-00000000000e', 'mallory@nc'),
    ('ffffffff-0000-4000-8000-00000000000f', 'nick@nc');
  INSERT INTO public.profiles (id, name, approved, is_admin) VALUES
    ('aaaaaaaa-0000-4000-8000-00000000000a', 'Alice', true, false), ('bbbbbbbb-0000-4000-8000-00000000000b', 'Bob', true, false),
    ('dddddddd-0000-4000-8000-00000000000d', 'Dora', true, true), ('eeeeeeee-0000-4000-8000-00000000000e', 'Mallory', false, false);
  INSERT INTO public.rides (id, user_id, claimed_by, pickup) VALUES
    ('11111111-0000-4000-8000-000000000001', 'aaaaaaaa-0000-4000-8000-00000000000a', NULL, 'alice-home'),
    ('11111111-0000-4000-8000-000000000002', 'bbbbbbbb-0000-4000-8000-00000000000b', 'eeeeeeee-0000-4000-8000-00000000000e', 'bob-home');
  INSERT INTO public.favors (id, user_id, title) VALUES
    ('22222222-0000-4000-8000-000000000001', 'aaaaaaaa-0000-4000-8000-00000000000a', 'water plants');
  INSERT INTO public.request_qa (ride_id, created_by, body) VALUES
    ('11111111-0000-4000-8000-000000000001', 'aaaaaaaa-0000-4000-8000-00000000000a', 'room for a bike?');
  INSERT INTO public.conversations (id, created_by) VALUES
    ('33333333-0000-4000-8000-000000000001', 'aaaaaaaa-0000-4000-8000-00000000000a');
  INSERT INTO public.conversation_participants (conversation_id, user_id) VALUES
    ('33333333-0000-4000-8000-000000000001', 'aaaaaaaa-0000-4000-8000-00000000000a'),
    ('33333333-0000-4000-8000-000000000001', 'bbbbbbbb-0000-4000-8000-00000000000b');
  INSERT INTO public.messages (conversation_id, from_id, text) VALUES
    ('33333333-0000-4000-8000-000000000001', 'aaaaaaaa-0000-4000-8000-00000000000a', 'gate code 4711');
  INSERT INTO public.notifications (user_id, title) VALUES ('aaaaaaaa-0000-4000-8000-00000000000a', 'ride claimed');
  INSERT INTO public.invite_codes (code, created_by, used_by, used_at) VALUES
    ('NC22222222', 'aaaaaaaa-0000-4000-8000-00000000000a', NULL, NULL),
    ('NC33333333', 'aaaaaaaa-0000-4000-8000-00000000000a', 'bbbbbbbb-0000-4000-8000-00000000000b', now());
  INSERT INTO public.push_tokens (user_id, device_id, token) VALUES ('aaaaaaaa-0000-4000-8000-00000000000a', 'alice-phone', 'apns-alice');
  INSERT INTO public.reviews (reviewer_id, reviewee_id, rating) VALUES
    ('aaaaaaaa-0000-4000-8000-00000000000a', 'bbbbbbbb-0000-4000-8000-00000000000b', 5);
  INSERT INTO public.town_hall_posts (user_id, content) VALUES ('aaaaaaaa-0000-4000-8000-00000000000a', 'welcome');
$$;

-- profiles (§2.1, §2.15) ------------------------------------------------------
BEGIN;
SELECT naarscars_test.fixture();
SELECT naarscars_test.act_as(:a);
-- §2.1: profiles_select_approved reads profiles inside its own policy: 42P17 for every read, one's own included (fails closed; the app cannot load a profile, nor AdminService its is_admin check)
SELECT naarscars_test.expect_error('profiles: an approved member cannot read even its own profile (42P17)', format('SELECT count(*) FROM profiles WHERE id = %L', :a), '42P17');
SELECT naarscars_test.act_as('anon');
SELECT naarscars_test.expect_error('profiles: anon reads fail the same way (42P17)', 'SELECT count(*) FROM profiles', '42P17');
SELECT naarscars_test.expect_error('profiles: anon cannot insert one', format('INSERT INTO profiles (id, name) VALUES (%L, %L)', :n, 'x'), '42501');
SELECT naarscars_test.act_as(:n);
-- §2.1: profiles_insert_own checks only the id: a fresh signup inserts itself approved and admin (hole; POST /rest/v1/profiles with Prefer: return=minimal)
SELECT naarscars_test.expect_rows('profiles: a new user inserts its own profile approved = true, is_admin = true (hole)',
  format('INSERT INTO profiles (id, name, approved, is_admin) VALUES (%L, %L, true, true)', :n, 'Nick'), 1);
SELECT naarscars_test.expect_error('profiles: not one for someone else', format('INSERT INTO profiles (id, name) VALUES (%L, %L)', gen_random_uuid(), 'x'), '42501');
SELECT naarscars_test.act_as('super');
SELECT naarscars_test.expect('profiles: ... and is stored approved and admin', format('SELECT count(*) FROM profiles WHERE id = %L AND approved AND is_admin', :n), 1);
SELECT naarscars_test.act_as(:u);
-- §2.15: admin_approve_users reads profiles too, so every UPDATE of profiles fails 42P17, a member's own name included; only this stops PATCH /profiles {approved:true} (fails closed)
SELECT naarscars_test.expect_error('profiles: self-approval by UPDATE fails, only by recursion (42P17)', 'UPDATE profiles SET approved = true, is_admin = true', '42P17');
SELECT naarscars_test.expect_error('profiles: renaming oneself fails too (42P17)', 'UPDATE profiles SET name = ''M''', '42P17');
SELECT naarscars_test.expect_rows('profiles: no DELETE policy, nothing deleted', 'DELETE FROM profiles', 0);
SELECT naarscars_test.act_as(:m);
SELECT naarscars_test.expect_error('profiles: §2.15 admins cannot approve anyone either (42P17)', format('UPDATE profiles SET approved = true WHERE id = %L', :u), '42P17');
SELECT naarscars_test.act_as('service');
SELECT naarscars_test.expect('profiles: the service role reads them all', 'SELECT count(*) FROM profiles', 5);
ROLLBACK;
BEGIN;
SELECT naarscars_test.fixture();
-- §2.1 without §2.15 (latent): profiles_update_own has no WITH CHECK and no column list, so once admin_approve_users goes (or its recursion is fixed) self-approval and self-admin succeed
DROP POLICY admin_approve_users ON public.profiles;
SELECT naarscars_test.act_as(:u);
SELECT naarscars_test.expect_rows('profiles: without §2.15, PATCH /profiles {approved,is_admin} (no filter) succeeds (latent hole)', 'UPDATE profiles SET approved = true, is_admin = true', 1);
SELECT naarscars_test.expect_error('profiles: without §2.15, a filtered PATCH still needs the SELECT policy (42P17)', format('UPDATE profiles SET name = ''x'' WHERE id = %L', :u), '42P17');
SELECT naarscars_test.act_as('super');
SELECT naarscars_test.expect('profiles: ... Mallory is now an approved admin', format('SELECT count(*) FROM profiles WHERE id = %L AND approved AND is_admin', :u), 1);
ROLLBACK;

-- rides (§2.2) ------------------------------------------------------------------
BEGIN;
SELECT naarscars_test.fixture();
SELECT naarscars_test.act_as(:a);
-- §2.2: rides_select_approved reads profiles, whose policy recurses: 42P17 for every reader (fails closed; nobody sees a ride)
SELECT naarscars_test.expect_error('rides: an approved member cannot list rides (42P17)', 'SELECT count(*) FROM rides', '42P17');
SELECT naarscars_test.act_as('anon');
SELECT naarscars_test.expect_error('rides: nor can anon (42P17)', 'SELECT count(*) FROM rides', '42P17');
SELECT naarscars_test.expect_error('rides: anon cannot post one', format('INSERT INTO rides (user_id, pickup) VALUES (%L, %L)', :a, 'x'), '42501');
SELECT naarscars_test.act_as(:u);
-- §2.2: rides_insert_own checks only user_id: an unapproved user posts rides, pre-claimed in anyone's name
SELECT naarscars_test.expect_rows('rides: an unapproved user posts a ride, claimed_by set to Alice who never claimed it (hole)',
  format('INSERT INTO rides (user_id, claimed_by, pickup, status) VALUES (%L, %L, %L, %L)', :u, :a, 'mallory-ride', 'confirmed'), 1);
SELECT naarscars_test.expect_error('rides: not in someone else''s name', format('INSERT INTO rides (user_id, pickup) VALUES (%L, %L)', :a, 'x'), '42501');
SELECT naarscars_test.expect_error('rides: RETURNING (Prefer: return=representation) needs the SELECT policy (42P17)',
  format('INSERT INTO rides (user_id, pickup) VALUES (%L, %L) RETURNING id', :u, 'x'), '42P17');
-- §2.2: rides_update_own_or_claimer has no WITH CHECK, so its USING is also the new row's check. A PATCH with no filter applies only it:
SELECT naarscars_test.act_as(:u);
SELECT naarscars_test.expect_rows('rides: the claimer rewrites the owner''s ride (PATCH /rides {pickup}, no filter) (hole)', 'UPDATE rides SET pickup = ''hijacked''', 2);
SELECT naarscars_test.expect_rows('rides: the claimer takes the ride over (PATCH /rides {user_id: me}) (hole)', format('UPDATE rides SET user_id = %L', :u), 2);
SELECT naarscars_test.act_as('super');
SELECT naarscars_test.expect('rides: ... Bob''s r2 is now Mallory''s, pickup rewritten', format('SELECT count(*) FROM rides WHERE id = %L AND user_id = %L AND pickup = ''hijacked''', :r2, :u), 1);
ROLLBACK;
BEGIN;
SELECT naarscars_test.fixture();
SELECT naarscars_test.act_as(:u);
-- §2.2: only the owner or the current claimer passes USING, so nobody can claim someone else's open ride (the claim feature does not work through RLS; fails closed)
SELECT naarscars_test.expect_rows('rides: PATCH /rides {claimed_by: me} (no filter) reaches only the ride Mallory already claimed', format('UPDATE rides SET claimed_by = %L', :u), 1);
SELECT naarscars_test.expect_error('rides: a filtered PATCH (?id=eq.r1) needs the SELECT policy (42P17)', format('UPDATE rides SET claimed_by = %L WHERE id = %L', :u, :r1), '42P17');
SELECT naarscars_test.act_as('super');
SELECT naarscars_test.expect('rides: ... Alice''s r1 is still unclaimed', format('SELECT count(*) FROM rides WHERE id = %L AND claimed_by IS NULL', :r1), 1);
SELECT naarscars_test.act_as(:u);
-- §2.2: the new row must still name the claimer or the owner, so the claimer cannot unclaim (fails closed)
SELECT naarscars_test.expect_error('rides: the claimer cannot unclaim (PATCH {claimed_by: null}: new row violates the policy)', 'UPDATE rides SET claimed_by = NULL', '42501');
-- §2.2: but it can move a ride into anyone's name while staying its claimer
SELECT naarscars_test.expect_rows('rides: Mallory posts a ride', format('INSERT INTO rides (user_id, pickup) VALUES (%L, %L)', :u, 'to-move'), 1);
SELECT naarscars_test.expect_rows('rides: ... and moves it and r2 into Alice''s name, claimed_by = Mallory (PATCH {user_id, claimed_by}) (hole)', format('UPDATE rides SET user_id = %L, claimed_by = %L', :a, :u), 2);
SELECT naarscars_test.act_as('super');
SELECT naarscars_test.expect('rides: ... Alice now "owns" two rides she never posted', format('SELECT count(*) FROM rides WHERE user_id = %L AND pickup IN (''to-move'', ''bob-home'')', :a), 2);
ROLLBACK;
BEGIN;
SELECT naarscars_test.fixture();
SELECT naarscars_test.act_as(:a);
-- §2.2: the owner sets claimed_by to anyone, a claim the claimer never made
SELECT naarscars_test.expect_rows('rides: the owner assigns its ride''s claim to Bob (PATCH {claimed_by: bob}, no filter)', format('UPDATE rides SET claimed_by = %L', :b), 1);
SELECT naarscars_test.expect_error('rides: the owner cannot delete by id (DELETE ?id=eq.: SELECT policy, 42P17)', format('DELETE FROM rides WHERE id = %L', :r1), '42P17');
SELECT naarscars_test.expect_rows('rides: a DELETE with no filter deletes one''s own rides only', 'DELETE FROM rides', 1);
ROLLBACK;

-- §5.3 claim/unclaim limit (003_rate_limits.sql): 3 changes of claimed_by a minute per user, then PT429 (HTTP 429)
BEGIN;
SELECT naarscars_test.fixture();
SELECT set_config('request.now', '2030-01-01 12:00:00+00', true);
SELECT naarscars_test.act_as(:a);
SELECT naarscars_test.expect_rows('rate: claim 1', format('UPDATE rides SET claimed_by = %L', :b), 1);
SELECT naarscars_test.expect_rows('rate: unclaim 2', 'UPDATE rides SET claimed_by = NULL', 1);
SELECT naarscars_test.expect_rows('rate: an update that leaves claimed_by as it is does not count', 'UPDATE rides SET claimed_by = NULL, pickup = ''moved''', 1);
SELECT naarscars_test.expect_rows('rate: claim 3', format('UPDATE rides SET claimed_by = %L', :b), 1);
SELECT naarscars_test.expect_error('rate: a 4th within the minute is refused (PT429)', 'UPDATE rides SET claimed_by = NULL', 'PT429', 'Too many attempts. Please try again later.');
SELECT naarscars_test.expect_error('rate: favors share the same budget (PT429)', format('UPDATE favors SET claimed_by = %L', :b), 'PT429');
SELECT set_config('request.now', '2030-01-01 12:01:00.5+00', true);
SELECT naarscars_test.expect_rows('rate: a minute later (auth.now()) it passes again', 'UPDATE rides SET claimed_by = NULL', 1);
SELECT naarscars_test.act_as(:b);
SELECT naarscars_test.expect_rows('rate: counted per user: Bob is not limited by Alice', 'UPDATE rides SET claimed_by = NULL', 1);
SELECT naarscars_test.act_as('service');
SELECT naarscars_test.expect_rows('rate: the service role (no user) is not limited: 1', format('UPDATE rides SET claimed_by = %L', :b), 2);
SELECT naarscars_test.expect_rows('rate: the service role: 2', 'UPDATE rides SET claimed_by = NULL', 2);
SELECT naarscars_test.expect_rows('rate: the service role: 3', format('UPDATE rides SET claimed_by = %L', :b), 2);
SELECT naarscars_test.expect_rows('rate: the service role: 4', 'UPDATE rides SET claimed_by = NULL', 2);
SELECT naarscars_test.act_as(:u);
SELECT naarscars_test.expect_error('rate: users cannot read the bookkeeping', 'SELECT count(*) FROM naarscars_private.rate_events', '42501');
ROLLBACK;

-- favors (§2.3), same pattern as rides ------------------------------------------------
BEGIN;
SELECT naarscars_test.fixture();
SELECT naarscars_test.act_as(:b);
SELECT naarscars_test.expect_error('favors: §2.3 an approved member cannot list favors (42P17)', 'SELECT count(*) FROM favors', '42P17');
SELECT naarscars_test.act_as(:u);
-- §2.3: favors_insert_own checks only user_id: unapproved users post favors, pre-claimed for anyone
SELECT naarscars_test.expect_rows('favors: §2.3 an unapproved user posts a favor claimed by Bob (hole)', format('INSERT INTO favors (user_id, claimed_by, title) VALUES (%L, %L, %L)', :u, :b, 'x'), 1);
SELECT naarscars_test.expect_rows('favors: §2.3 nobody claims another''s open favor (no filter: own rows only)', format('UPDATE favors SET claimed_by = %L', :u), 1);
SELECT naarscars_test.act_as('super');
SELECT naarscars_test.expect('favors: ... Alice''s f1 is still unclaimed', format('SELECT count(*) FROM favors WHERE id = %L AND claimed_by IS NULL', :f1), 1);
ROLLBACK;

-- ride_participants, favor_participants (§2.4, §2.5) ------------------------------------
BEGIN;
SELECT naarscars_test.fixture();
SELECT naarscars_test.act_as(:a);
-- §2.4–2.5: the SELECT policy reads profiles and the INSERT check reads rides/favors (whose policy reads profiles): 42P17 both ways (fails closed; nobody joins a ride)
SELECT naarscars_test.expect_error('ride_participants: §2.4 reading fails (42P17)', 'SELECT count(*) FROM ride_participants', '42P17');
SELECT naarscars_test.expect_error('ride_participants: §2.4 even the ride''s owner cannot add a participant (42P17)', format('INSERT INTO ride_participants (ride_id, user_id) VALUES (%L, %L)', :r1, :b), '42P17');
SELECT naarscars_test.expect_error('favor_participants: §2.5 reading fails (42P17)', 'SELECT count(*) FROM favor_participants', '42P17');
SELECT naarscars_test.expect_error('favor_participants: §2.5 even the favor''s owner cannot add one (42P17)', format('INSERT INTO favor_participants (favor_id, user_id) VALUES (%L, %L)', :f1, :b), '42P17');
ROLLBACK;

-- request_qa (§2.6) -----------------------------------------------------------------
BEGIN;
SELECT naarscars_test.fixture();
SELECT naarscars_test.act_as(:b);
-- §2.6: both approval checks read profiles: 42P17 (fails closed; no Q&A at all)
SELECT naarscars_test.expect_error('request_qa: §2.6 an approved member cannot read Q&A (42P17)', 'SELECT count(*) FROM request_qa', '42P17');
SELECT naarscars_test.expect_error('request_qa: §2.6 nor ask (42P17)', format('INSERT INTO request_qa (ride_id, created_by, body) VALUES (%L, %L, %L)', :r1, :b, 'q'), '42P17');
SELECT naarscars_test.expect_rows('request_qa: §2.6 nor delete another''s (no filter)', 'DELETE FROM request_qa', 0);
SELECT naarscars_test.act_as(:a);
SELECT naarscars_test.expect_rows('request_qa: §2.6 the author deletes its own (no filter)', 'DELETE FROM request_qa', 1);
ROLLBACK;

-- messages, conversations, conversation_participants (§2.7–2.9) --------------------------
BEGIN;
SELECT naarscars_test.fixture();
SELECT naarscars_test.act_as(:b);
SELECT naarscars_test.expect('messages: §2.7 a participant reads the conversation', 'SELECT count(*) FROM messages', 1);
SELECT naarscars_test.expect('conversation_participants: §2.9 a participant sees all of its conversation''s members', 'SELECT count(*) FROM conversation_participants', 2);
-- §2.8: `conversation_id = id` inside the subquery compares conversation_participants with itself (its own id column wins), so nobody sees any conversation (fails closed)
SELECT naarscars_test.expect('conversations: §2.8 not even its creator and participant sees it', 'SELECT count(*) FROM conversations', 0);
SELECT naarscars_test.expect_error('conversations: §2.8 no INSERT policy: users cannot start one', format('INSERT INTO conversations (created_by) VALUES (%L)', :b), '42501');
SELECT naarscars_test.act_as(:a);
-- §2.9: the creator branch reads conversations, which §2.8 hides: the creator cannot add anyone (fails closed)
SELECT naarscars_test.expect_error('conversation_participants: §2.9 the creator cannot add Dora', format('INSERT INTO conversation_participants (conversation_id, user_id) VALUES (%L, %L)', :c1, :m), '42501');
SELECT naarscars_test.act_as('anon');
SELECT naarscars_test.expect('messages: anon reads none', 'SELECT count(*) FROM messages', 0);
-- §2.9: is_conversation_participant is SECURITY DEFINER and executable by PUBLIC: an RPC answering "is X in conversation Y" for anyone, anon included (oracle)
SELECT naarscars_test.expect('conversation_participants: §2.9 anon asks POST /rpc/is_conversation_participant whether Alice is in c1 (oracle)',
  format('SELECT count(*) FROM (SELECT public.is_conversation_participant(%L, %L) AS p) x WHERE p', :c1, :a), 1);
SELECT naarscars_test.act_as(:u);
SELECT naarscars_test.expect('messages: §2.7 an outsider reads none', 'SELECT count(*) FROM messages', 0);
SELECT naarscars_test.expect_error('messages: §2.7 an outsider cannot post', format('INSERT INTO messages (conversation_id, from_id, text) VALUES (%L, %L, %L)', :c1, :u, 'hi'), '42501');
SELECT naarscars_test.expect_error('conversation_participants: §2.9 nor add someone else', format('INSERT INTO conversation_participants (conversation_id, user_id) VALUES (%L, %L)', :c1, :m), '42501');
-- §2.9: participants_insert_creator_or_self lets anyone (unapproved too) add itself to any conversation whose id it has
SELECT naarscars_test.expect_rows('conversation_participants: §2.9 an unapproved outsider joins c1 (POST /conversation_participants {conversation_id, user_id: me}) (hole)',
  format('INSERT INTO conversation_participants (conversation_id, user_id) VALUES (%L, %L)', :c1, :u), 1);
SELECT naarscars_test.expect('messages: §2.7 ... and reads its whole history (hole)', 'SELECT count(*) FROM messages WHERE text = ''gate code 4711''', 1);
SELECT naarscars_test.expect('conversation_participants: §2.9 ... and its members', 'SELECT count(*) FROM conversation_participants', 3);
SELECT naarscars_test.expect_rows('messages: §2.7 ... and posts into it (hole)', format('INSERT INTO messages (conversation_id, from_id, text) VALUES (%L, %L, %L)', :c1, :u, 'hi'), 1);
SELECT naarscars_test.expect_error('messages: §2.7 but not as Alice', format('INSERT INTO messages (conversation_id, from_id, text) VALUES (%L, %L, %L)', :c1, :a, 'forged'), '42501');
SELECT naarscars_test.expect_rows('messages: §2.7 no UPDATE policy: messages cannot be edited', 'UPDATE messages SET text = ''x''', 0);
SELECT naarscars_test.expect_rows('messages: §2.7 no DELETE policy: nor deleted', 'DELETE FROM messages', 0);
SELECT naarscars_test.expect_rows('conversation_participants: §2.9 cannot take over Bob''s membership', format('UPDATE conversation_participants SET user_id = %L WHERE user_id = %L', :u, :b), 0);
SELECT naarscars_test.expect_rows('conversation_participants: §2.9 nor remove Bob', format('DELETE FROM conversation_participants WHERE user_id = %L', :b), 0);
ROLLBACK;

-- notifications (§2.10) ------------------------------------------------------------
BEGIN;
SELECT naarscars_test.fixture();
SELECT naarscars_test.act_as(:a);
SELECT naarscars_test.expect('notifications: §2.10 one''s own are readable', 'SELECT count(*) FROM notifications', 1);
SELECT naarscars_test.act_as(:u);
SELECT naarscars_test.expect('notifications: §2.10 others'' are not', 'SELECT count(*) FROM notifications', 0);
SELECT naarscars_test.expect_rows('notifications: §2.10 nor markable read', 'UPDATE notifications SET read = true', 0);
-- §2.10: notifications_insert is WITH CHECK (true): any user (unapproved too) writes any notification to anyone, pinned like an admin broadcast
SELECT naarscars_test.expect_rows('notifications: §2.10 Mallory notifies Alice, pinned (POST /notifications {user_id: alice, pinned: true}) (hole)',
  format('INSERT INTO notifications (user_id, title, pinned) VALUES (%L, %L, true)', :a, 'Admin: re-enter your password at evil.example'), 1);
SELECT naarscars_test.act_as('anon');
-- §2.10: ... and so can the anon key, which §3.1 ships in the app
SELECT naarscars_test.expect_rows('notifications: §2.10 anon notifies Bob (hole)', format('INSERT INTO notifications (user_id, title) VALUES (%L, %L)', :b, 'spam'), 1);
SELECT naarscars_test.act_as(:a);
SELECT naarscars_test.expect('notifications: ... Alice reads the forged one', 'SELECT count(*) FROM notifications WHERE pinned', 1);
SELECT naarscars_test.expect_error('notifications: §2.10 one''s own cannot be handed to another', format('UPDATE notifications SET user_id = %L', :b), '42501');
SELECT naarscars_test.expect_rows('notifications: §2.10 no DELETE policy: not even one''s own', 'DELETE FROM notifications', 0);
ROLLBACK;

-- invite_codes (§2.11, §6) -----------------------------------------------------------
BEGIN;
SELECT naarscars_test.fixture();
SELECT naarscars_test.act_as('anon');
-- §2.11: anyone, even anon, lists every unused invite code and who made it (leak: GET /rest/v1/invite_codes?select=code,created_by)
SELECT naarscars_test.expect('invite_codes: §2.11 anon lists every unused code (leak)', 'SELECT count(*) FROM invite_codes WHERE code = ''NC22222222''', 1);
SELECT naarscars_test.expect('invite_codes: §2.11 ... but not used ones', 'SELECT count(*) FROM invite_codes', 1);
SELECT naarscars_test.act_as(:u);
SELECT naarscars_test.expect('invite_codes: §2.11 so does any signed-in user (leak)', 'SELECT count(*) FROM invite_codes', 1);
SELECT naarscars_test.expect_rows('invite_codes: §2.11 no UPDATE policy: a code cannot be marked used', format('UPDATE invite_codes SET used_by = %L', :u), 0);
SELECT naarscars_test.expect_rows('invite_codes: §2.11 no DELETE policy', 'DELETE FROM invite_codes', 0);
SELECT naarscars_test.act_as(:a);
SELECT naarscars_test.expect('invite_codes: §2.11 the creator sees its used ones as well', 'SELECT count(*) FROM invite_codes', 2);
-- §2.11: invite_codes_insert_approved reads profiles: 42P17, so no member can create a code (fails closed; only the service role can)
SELECT naarscars_test.expect_error('invite_codes: §2.11 an approved member cannot create a code (42P17)', 'INSERT INTO invite_codes (code) VALUES (''NC44444444'')', '42P17');
SELECT naarscars_test.act_as('anon');
SELECT naarscars_test.expect_error('invite_codes: §2.11 nor can anon (42P17)', format('INSERT INTO invite_codes (code, created_by) VALUES (''NC44444444'', %L)', :a), '42P17');
-- §6 (004_invite_rpcs.sql): validation at signup, one uniform error for unknown and used codes
SELECT naarscars_test.expect('invite_codes: §6 validate_invite_code accepts an unused code (any case)', 'SELECT count(*) FROM (SELECT public.validate_invite_code('' nc22222222 '') AS ok) x WHERE ok', 1);
SELECT naarscars_test.expect_error('invite_codes: §6.3 a used code', 'SELECT public.validate_invite_code(''NC33333333'')', 'P0001', 'Invalid or expired invite code');
SELECT naarscars_test.expect_error('invite_codes: §6.3 an unknown code, the same error', 'SELECT public.validate_invite_code(''NCZZZZZZZZ'')', 'P0001', 'Invalid or expired invite code');
SELECT naarscars_test.expect_error('invite_codes: §6 anon cannot redeem', 'SELECT public.redeem_invite_code(''NC22222222'')', '42501');
SELECT naarscars_test.act_as(:n);
SELECT naarscars_test.expect('invite_codes: §6 the new user redeems the code', 'SELECT count(*) FROM (SELECT public.redeem_invite_code(''NC22222222'') AS ok) x WHERE ok', 1);
SELECT naarscars_test.expect_error('invite_codes: §6 ... once', 'SELECT public.redeem_invite_code(''NC22222222'')', 'P0001', 'You have already used an invite code');
SELECT naarscars_test.expect('invite_codes: §6 ... so it no longer lists', 'SELECT count(*) FROM invite_codes', 0);
SELECT naarscars_test.act_as(:u);
SELECT naarscars_test.expect_error('invite_codes: §6.3 redeeming a used code, the uniform error', 'SELECT public.redeem_invite_code(''NC22222222'')', 'P0001', 'Invalid or expired invite code');
SELECT naarscars_test.expect_error('invite_codes: §6.3 redeeming an unknown code, the same', 'SELECT public.redeem_invite_code(''NCZZZZZZZZ'')', 'P0001', 'Invalid or expired invite code');
SELECT naarscars_test.act_as('super');
SELECT naarscars_test.expect('invite_codes: ... recorded as used by the new user', format('SELECT count(*) FROM invite_codes WHERE code = ''NC22222222'' AND used_by = %L AND used_at IS NOT NULL', :n), 1);
SELECT naarscars_test.expect_error('invite_codes: §6.1 the format is NC + 8 of its alphabet', format('INSERT INTO invite_codes (code, created_by) VALUES (''NC0000000O'', %L)', :a), '23514');
ROLLBACK;

-- §5.3 invite generation limit (003_rate_limits.sql): 5 codes a day per user, then PT429.
-- Members cannot insert at all (42P17 above), so this acts as the owner with a
-- member's claims: what the trigger does once that policy works.
BEGIN;
SELECT naarscars_test.fixture();
SELECT set_config('request.now', '2030-01-01 12:00:00+00', true);
SELECT set_config('request.jwt.claims', json_build_object('sub', :a, 'role', 'authenticated')::text, true);
SELECT naarscars_test.expect_rows('rate: 5 codes in a day', 'INSERT INTO invite_codes (code) VALUES (''NC4444444A''), (''NC4444444B''), (''NC4444444C''), (''NC4444444D''), (''NC4444444E'')', 5);
SELECT naarscars_test.expect_error('rate: a 6th is refused (PT429)', 'INSERT INTO invite_codes (code) VALUES (''NC4444444F'')', 'PT429', 'Too many attempts. Please try again later.');
SELECT naarscars_test.expect_error('rate: counted per acting user, not per created_by', format('INSERT INTO invite_codes (code, created_by) VALUES (''NC4444444F'', %L)', :b), 'PT429');
SELECT set_config('request.now', '2030-01-02 12:00:01+00', true);
SELECT naarscars_test.expect_rows('rate: a day later it passes', 'INSERT INTO invite_codes (code) VALUES (''NC4444444F'')', 1);
SELECT set_config('request.jwt.claims', json_build_object('sub', :b, 'role', 'authenticated')::text, true);
SELECT naarscars_test.expect_rows('rate: Bob has his own 5', 'INSERT INTO invite_codes (code) VALUES (''NC5555555A'')', 1);
ROLLBACK;

-- push_tokens (§2.12) ------------------------------------------------------------------
BEGIN;
SELECT naarscars_test.fixture();
SELECT naarscars_test.act_as(:a);
SELECT naarscars_test.expect('push_tokens: §2.12 one''s own token is readable', 'SELECT count(*) FROM push_tokens', 1);
SELECT naarscars_test.act_as(:u);
-- §2.12: push_tokens_own (FOR ALL USING, also the check of new rows) holds: own rows only, every way
SELECT naarscars_test.expect('push_tokens: §2.12 others'' are not', 'SELECT count(*) FROM push_tokens', 0);
SELECT naarscars_test.expect_error('push_tokens: §2.12 no token in another''s name', format('INSERT INTO push_tokens (user_id, device_id, token) VALUES (%L, %L, %L)', :a, 'd', 't'), '42501');
SELECT naarscars_test.expect_rows('push_tokens: §2.12 one''s own (any token string, e.g. someone else''s APNs token)', format('INSERT INTO push_tokens (user_id, device_id, token) VALUES (%L, %L, %L)', :u, 'd', 'apns-alice'), 1);
SELECT naarscars_test.expect_error('push_tokens: §2.12 one''s own cannot be moved to another', format('UPDATE push_tokens SET user_id = %L', :a), '42501');
SELECT naarscars_test.expect_rows('push_tokens: §2.12 §7.3''s delete by token reaches only one''s own', 'DELETE FROM push_tokens WHERE token = ''apns-alice''', 1);
SELECT naarscars_test.act_as('anon');
SELECT naarscars_test.expect('push_tokens: §2.12 anon reads none', 'SELECT count(*) FROM push_tokens', 0);
ROLLBACK;

-- reviews (§2.13) ----------------------------------------------------------------------
BEGIN;
SELECT naarscars_test.fixture();
SELECT naarscars_test.act_as(:a);
SELECT naarscars_test.expect_error('reviews: §2.13 an approved member cannot read reviews (42P17)', 'SELECT count(*) FROM reviews', '42P17');
SELECT naarscars_test.act_as(:u);
-- §2.13: reviews_insert_own checks only reviewer_id: an unapproved user who never rode reviews anyone, any number of times, itself included
SELECT naarscars_test.expect_rows('reviews: §2.13 an unapproved stranger gives Alice 1 star, twice (POST /reviews) (hole)',
  format('INSERT INTO reviews (reviewer_id, reviewee_id, ride_id, rating) VALUES (%L, %L, %L, 1), (%L, %L, %L, 1)', :u, :a, :r1, :u, :a, :r1), 2);
SELECT naarscars_test.expect_rows('reviews: §2.13 ... and itself 5 stars (hole)', format('INSERT INTO reviews (reviewer_id, reviewee_id, rating) VALUES (%L, %L, 5)', :u, :u), 1);
SELECT naarscars_test.expect_error('reviews: §2.13 not in another''s name', format('INSERT INTO reviews (reviewer_id, reviewee_id, rating) VALUES (%L, %L, 5)', :a, :u), '42501');
SELECT naarscars_test.expect_rows('reviews: §2.13 no UPDATE or DELETE policy', 'DELETE FROM reviews', 0);
ROLLBACK;

-- town_hall_posts (§2.14) --------------------------------------------------------------
BEGIN;
SELECT naarscars_test.fixture();
SELECT naarscars_test.act_as(:a);
SELECT naarscars_test.expect_error('town_hall_posts: §2.14 an approved member cannot read posts (42P17)', 'SELECT count(*) FROM town_hall_posts', '42P17');
-- §2.14: the delete policy's admin branch reads profiles: 42P17, so nobody deletes, not even their own post (fails closed; no moderation)
SELECT naarscars_test.expect_error('town_hall_posts: §2.14 the author cannot delete its post (42P17)', 'DELETE FROM town_hall_posts', '42P17');
SELECT naarscars_test.act_as(:m);
SELECT naarscars_test.expect_error('town_hall_posts: §2.14 nor can an admin (42P17)', 'DELETE FROM town_hall_posts', '42P17');
SELECT naarscars_test.act_as(:u);
-- §2.14: town_hall_posts_insert_own checks only user_id: an unapproved user posts
SELECT naarscars_test.expect_rows('town_hall_posts: §2.14 an unapproved user posts (hole)', format('INSERT INTO town_hall_posts (user_id, content) VALUES (%L, %L)', :u, 'buy crypto'), 1);
SELECT naarscars_test.expect_error('town_hall_posts: §2.14 not as another', format('INSERT INTO town_hall_posts (user_id, content) VALUES (%L, %L)', :a, 'x'), '42501');
SELECT naarscars_test.act_as('anon');
SELECT naarscars_test.expect_error('town_hall_posts: §2.14 anon cannot post', format('INSERT INTO town_hall_posts (user_id, content) VALUES (%L, %L)', :a, 'x'), '42501');
ROLLBACK;

SET client_min_messages = warning;
DROP SCHEMA naarscars_test CASCADE;
