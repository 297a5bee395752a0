-- The RLS matrix, run inside PostgreSQL against Storage/PostgreSQL/000_platform.sql
-- and Apps/GreenBox/GreenBoxSQL/001_greenbox.sql:
-- each policy's allowed case and each denied case, acting as users exactly as
-- `convoy serve` will (SET LOCAL ROLE + request.jwt.claims). Every passing check
-- prints `NOTICE:  check ok: …`; the first failing one stops the script.
\set ON_ERROR_STOP 1
SET client_min_messages = notice;

CREATE SCHEMA convoy_test;
GRANT USAGE ON SCHEMA convoy_test TO PUBLIC;
CREATE FUNCTION convoy_test.act_as(who text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF who = 'anon' THEN
    PERFORM set_config('request.jwt.claims', '{"role":"anon"}', true);
    PERFORM set_config('role', 'anon', true);
  ELSIF who = 'service' THEN
    PERFORM set_config('request.jwt.claims', '{"role":"service_role"}', true);
    PERFORM set_config('role', 'service_role', true);
  ELSE
    PERFORM set_config('request.jwt.claims', json_build_object('sub', who, 'role', 'authenticated')::text, true);
    PERFORM set_config('role', 'authenticated', true);
  END IF;
END $$;
-- `query` must return one number; it must equal `expected`.
CREATE FUNCTION convoy_test.expect(name text, query text, expected bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE got bigint;
BEGIN
  EXECUTE query INTO got;
  IF got IS DISTINCT FROM expected THEN RAISE EXCEPTION 'FAILED %: got %, expected % (%)', name, got, expected, query; END IF;
  RAISE NOTICE 'check ok: %', name;
END $$;
-- `statement` must fail with SQLSTATE `code`.
CREATE FUNCTION convoy_test.expect_error(name text, statement text, code text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    EXECUTE statement;
  EXCEPTION WHEN OTHERS THEN
    IF SQLSTATE = code THEN RAISE NOTICE 'check ok: %', name; RETURN; END IF;
    RAISE EXCEPTION 'FAILED %: got % (%), expected % (%)', name, SQLSTATE, SQLERRM, code, statement;
  END;
  RAISE EXCEPTION 'FAILED %: succeeded, expected % (%)', name, code, statement;
END $$;

-- Alice (a), Bob (b), Carol (c) with profiles; Dave (d) signed up without one.
INSERT INTO auth.users (id, email) VALUES
  ('aaaaaaaa-0000-4000-8000-00000000000a', 'a@x'), ('bbbbbbbb-0000-4000-8000-00000000000b', 'b@x'),
  ('cccccccc-0000-4000-8000-00000000000c', 'c@x'), ('dddddddd-0000-4000-8000-00000000000d', 'd@x');
INSERT INTO public.users (id, public_key) VALUES
  ('aaaaaaaa-0000-4000-8000-00000000000a', 'pk-a'), ('bbbbbbbb-0000-4000-8000-00000000000b', 'pk-b'),
  ('cccccccc-0000-4000-8000-00000000000c', 'pk-c');
\set a '''aaaaaaaa-0000-4000-8000-00000000000a'''
\set b '''bbbbbbbb-0000-4000-8000-00000000000b'''
\set c '''cccccccc-0000-4000-8000-00000000000c'''
\set d '''dddddddd-0000-4000-8000-00000000000d'''

-- users ------------------------------------------------------------------------
BEGIN;
SELECT convoy_test.act_as(:a);
SELECT convoy_test.expect('users: any user reads all profiles', 'SELECT count(*) FROM users', 3);
SELECT convoy_test.expect('users: own row updatable', format('WITH u AS (UPDATE users SET public_key = %L WHERE id = %L RETURNING 1) SELECT count(*) FROM u', 'new', :a), 1);
SELECT convoy_test.expect('users: another''s key cannot be substituted', format('WITH u AS (UPDATE users SET public_key = %L WHERE id = %L RETURNING 1) SELECT count(*) FROM u', 'evil', :b), 0);
SELECT convoy_test.expect_error('users: own row cannot move to another id', format('UPDATE users SET id = %L WHERE id = %L', :d, :a), '42501');
SELECT convoy_test.expect_error('users: no row for someone else', format('INSERT INTO users (id, public_key) VALUES (%L, %L)', :d, 'x'), '42501');
SELECT convoy_test.expect('users: nobody deletes', format('WITH u AS (DELETE FROM users WHERE id = %L RETURNING 1) SELECT count(*) FROM u', :a), 0);
ROLLBACK;
BEGIN;
SELECT convoy_test.act_as('anon');
SELECT convoy_test.expect('users: anon sees nothing', 'SELECT count(*) FROM users', 0);
SELECT convoy_test.expect_error('users: anon cannot insert', format('INSERT INTO users (id, public_key) VALUES (%L, %L)', :d, 'x'), '42501');
ROLLBACK;
BEGIN;
SELECT convoy_test.act_as(:d);
SELECT convoy_test.expect('users: own profile insertable', format('WITH u AS (INSERT INTO users (id, public_key) VALUES (%L, %L) RETURNING 1) SELECT count(*) FROM u', :d, 'pk-d'), 1);
ROLLBACK;

-- friendships ------------------------------------------------------------------------
BEGIN;
SELECT convoy_test.act_as(:a);
SELECT convoy_test.expect('friendships: request as oneself', format(
  'WITH f AS (INSERT INTO friendships (user_id_1, user_id_2, requested_by, preference_1) VALUES (%L, %L, %L, %L) RETURNING 1) SELECT count(*) FROM f', :a, :b, :a, 'precise'), 1);
SELECT convoy_test.expect_error('friendships: not requested by someone else', format(
  'INSERT INTO friendships (user_id_1, user_id_2, requested_by) VALUES (%L, %L, %L)', :a, :c, :c), '42501');
SELECT convoy_test.expect_error('friendships: not born active', format(
  'INSERT INTO friendships (user_id_1, user_id_2, requested_by, status) VALUES (%L, %L, %L, %L)', :a, :c, :a, 'active'), '42501');
SELECT convoy_test.expect_error('friendships: only between oneself and another', format(
  'INSERT INTO friendships (user_id_1, user_id_2, requested_by) VALUES (%L, %L, %L)', :b, :c, :a), '42501');
SELECT convoy_test.expect_error('friendships: the invitee''s preference is theirs', format(
  'INSERT INTO friendships (user_id_1, user_id_2, requested_by, preference_2) VALUES (%L, %L, %L, %L)', :a, :c, :a, 'precise'), '42501');
SELECT convoy_test.expect_error('friendships: the requester cannot accept', 'UPDATE friendships SET status = ''active''', '42501');
SELECT convoy_test.expect_error('friendships: members are fixed', format('UPDATE friendships SET user_id_2 = %L', :c), '42501');
SELECT convoy_test.act_as(:c);
SELECT convoy_test.expect('friendships: outsiders see none', 'SELECT count(*) FROM friendships', 0);
SELECT convoy_test.expect('friendships: outsiders change none', 'WITH u AS (UPDATE friendships SET status = ''active'' RETURNING 1) SELECT count(*) FROM u', 0);
SELECT convoy_test.expect('friendships: outsiders delete none', 'WITH u AS (DELETE FROM friendships RETURNING 1) SELECT count(*) FROM u', 0);
SELECT convoy_test.act_as(:b);
SELECT convoy_test.expect('friendships: members see it', 'SELECT count(*) FROM friendships', 1);
SELECT convoy_test.expect_error('friendships: the other''s preference is theirs', 'UPDATE friendships SET preference_1 = ''general''', '42501');
SELECT convoy_test.expect('friendships: the invitee accepts', 'WITH u AS (UPDATE friendships SET status = ''active'', preference_2 = ''general'' RETURNING 1) SELECT count(*) FROM u', 1);
SELECT convoy_test.expect('friendships: a member unfriends', 'WITH u AS (DELETE FROM friendships RETURNING 1) SELECT count(*) FROM u', 1);
ROLLBACK;

-- encrypted_locations --------------------------------------------------------------
BEGIN;
SELECT convoy_test.act_as(:a);
SELECT convoy_test.expect('locations: post as oneself (to anyone, as the PRD allows)', format(
  'WITH l AS (INSERT INTO encrypted_locations (sender_id, recipient_id, payload) VALUES (%L, %L, %L), (%L, %L, %L) RETURNING 1) SELECT count(*) FROM l',
  :a, :b, 'p1', :a, :c, 'p2'), 2);
SELECT convoy_test.expect_error('locations: no spoofed sender', format(
  'INSERT INTO encrypted_locations (sender_id, recipient_id, payload) VALUES (%L, %L, %L)', :b, :c, 'forged'), '42501');
SELECT convoy_test.expect_error('locations: ids are the database''s', format(
  'INSERT INTO encrypted_locations (id, sender_id, recipient_id, payload) VALUES (9223372036854775807, %L, %L, %L)', :a, :b, 'x'), '428C9');
INSERT INTO encrypted_locations (sender_id, recipient_id, payload, created_at) VALUES (:a, :b, 'late', '9999-12-31T00:00:00Z');
SELECT convoy_test.expect_error('locations: RETURNING needs the SELECT policy (return=representation)', format(
  'INSERT INTO encrypted_locations (sender_id, recipient_id, payload) VALUES (%L, %L, %L) RETURNING id', :a, :b, 'x'), '42501');
SELECT convoy_test.expect('locations: senders cannot read back', 'SELECT count(*) FROM encrypted_locations', 0);
SELECT convoy_test.act_as(:b);
SELECT convoy_test.expect('locations: the recipient reads their own', 'SELECT count(*) FROM encrypted_locations', 2);
SELECT convoy_test.expect('locations: created_at is stamped by the server', 'SELECT count(*) FROM encrypted_locations WHERE payload = ''late'' AND created_at <= now()', 1);
SELECT convoy_test.expect('locations: nobody edits', 'WITH u AS (UPDATE encrypted_locations SET payload = ''x'' RETURNING 1) SELECT count(*) FROM u', 0);
SELECT convoy_test.expect('locations: nobody deletes', 'WITH u AS (DELETE FROM encrypted_locations RETURNING 1) SELECT count(*) FROM u', 0);
SELECT convoy_test.act_as('anon');
SELECT convoy_test.expect('locations: anon reads nothing', 'SELECT count(*) FROM encrypted_locations', 0);
SELECT convoy_test.act_as('service');
SELECT convoy_test.expect('locations: the service role reads all', 'SELECT count(*) FROM encrypted_locations', 3);
ROLLBACK;

-- invites ------------------------------------------------------------------------
BEGIN;
SELECT convoy_test.act_as(:a);
CREATE TEMP TABLE inv AS SELECT create_invite('general') ->> 'code' AS code;
GRANT SELECT ON inv TO PUBLIC;
SELECT convoy_test.expect('invites: an 8-character code', 'SELECT length(code) FROM inv', 8);
SELECT convoy_test.expect_error('invites: not one''s own', 'SELECT accept_invite((SELECT code FROM inv))', 'P0001');
SELECT convoy_test.expect('invites: the inviter sees it', 'SELECT count(*) FROM invites', 1);
SELECT convoy_test.act_as(:b);
SELECT convoy_test.expect('invites: others do not', 'SELECT count(*) FROM invites', 0);
SELECT convoy_test.expect('invites: accepting makes an active friendship with both preferences',
  'SELECT count(*) FROM (SELECT accept_invite(lower((SELECT code FROM inv)), ''precise'') AS f) x WHERE f ->> ''status'' = ''active'' AND f ->> ''preference_1'' = ''general'' AND f ->> ''preference_2'' = ''precise''', 1);
SELECT convoy_test.act_as(:c);
SELECT convoy_test.expect_error('invites: a used code', 'SELECT accept_invite((SELECT code FROM inv))', 'P0001');
SELECT convoy_test.expect_error('invites: an unknown code', 'SELECT accept_invite(''ZZZZZZZZ'')', 'P0001');
SELECT convoy_test.act_as('anon');
SELECT convoy_test.expect_error('invites: anon cannot invite', 'SELECT create_invite()', '42501');
ROLLBACK;

-- strict policies, retention, realtime notifications ---------------------------------
BEGIN;
\ir ../../../Sources/ConvoyServer/Apps/GreenBox/GreenBoxSQL/002_strict_policies.sql
SELECT convoy_test.act_as(:a);
SELECT create_invite() ->> 'code' AS code \gset
SELECT convoy_test.act_as(:b);
SELECT accept_invite(:'code');
SELECT convoy_test.act_as(:a);
SELECT convoy_test.expect('strict: post to an active friend', format(
  'WITH l AS (INSERT INTO encrypted_locations (sender_id, recipient_id, payload) VALUES (%L, %L, %L) RETURNING 1) SELECT count(*) FROM l', :a, :b, 'p'), 1);
SELECT convoy_test.expect_error('strict: not to a stranger', format(
  'INSERT INTO encrypted_locations (sender_id, recipient_id, payload) VALUES (%L, %L, %L)', :a, :c, 'p'), '42501');
ROLLBACK;

BEGIN;
SELECT convoy_test.act_as('service');
INSERT INTO encrypted_locations (sender_id, recipient_id, payload, created_at) VALUES
  (:a, :b, 'old', now() - interval '11 minutes'), (:a, :b, 'young', now() - interval '9 minutes');
SELECT convoy_test.expect('retention: rows past 10 minutes go', 'SELECT purge_old_locations(''10 minutes'')', 1);
SELECT convoy_test.expect('retention: younger rows stay', 'SELECT count(*) FROM encrypted_locations', 1);
SELECT convoy_test.expect('retention: the service role reads the log', 'SELECT deleted FROM purge_log ORDER BY id DESC LIMIT 1', 1);
SELECT convoy_test.act_as(:a);
SELECT convoy_test.expect('retention: users do not', 'SELECT count(*) FROM purge_log', 0);
SELECT convoy_test.expect_error('retention: users cannot purge', 'SELECT purge_old_locations()', '42501');
ROLLBACK;

-- Paths found by review ------------------------------------------------------------
BEGIN;
SELECT convoy_test.act_as(:a);
SELECT create_invite('precise') ->> 'code' AS first \gset
SELECT convoy_test.act_as(:b);
SELECT accept_invite(:'first');
SELECT convoy_test.act_as(:a);
SELECT create_invite('general') ->> 'code' AS second \gset
SELECT convoy_test.act_as(:b);
SELECT convoy_test.expect('invites: re-accepting (new preferences) works', format(
  'SELECT count(*) FROM (SELECT accept_invite(%L, NULL) AS f) x WHERE f ->> ''preference_1'' = ''general'' AND f ->> ''preference_2'' = ''precise''', :'second'), 1);
ROLLBACK;
BEGIN;
SELECT convoy_test.act_as(:b);
INSERT INTO friendships (user_id_1, user_id_2, requested_by) VALUES (:b, :a, :b);
SELECT convoy_test.act_as(:a);
SELECT create_invite() ->> 'code' AS code2 \gset
SELECT convoy_test.act_as(:b);
SELECT convoy_test.expect('invites: accepting after asking first works', format(
  'SELECT count(*) FROM (SELECT accept_invite(%L) AS f) x WHERE f ->> ''status'' = ''active''', :'code2'), 1);
SELECT convoy_test.act_as('anon');
SELECT convoy_test.expect_error('invites: anon cannot accept', 'SELECT accept_invite(''ABCDEFGH'')', '42501');
SELECT convoy_test.act_as(:a);
SELECT convoy_test.expect_error('invites: not forged directly', format(
  'INSERT INTO invites (code, inviter_id, preference, expires_at) VALUES (%L, %L, %L, now() + interval ''1 day'')', 'FORGED12', :a, 'precise'), '42501');
SELECT convoy_test.expect('invites: not extended directly (no UPDATE policy: no rows)', 'WITH u AS (UPDATE invites SET expires_at = now() + interval ''100 years'' RETURNING 1) SELECT count(*) FROM u', 0);
SELECT convoy_test.expect_error('retention: users cannot write the log', 'INSERT INTO purge_log (ran_at, deleted, cutoff) VALUES (now(), 0, now())', '42501');
SELECT convoy_test.expect('notify: large rows still insert (only keys are announced)', format(
  'WITH l AS (INSERT INTO encrypted_locations (sender_id, recipient_id, payload) VALUES (%L, %L, repeat(''x'', 20000))) SELECT 1', :a, :b), 1);
SELECT convoy_test.expect('notify: large rows still update', format(
  'WITH u AS (UPDATE users SET avatar_url = repeat(''x'', 9000) WHERE id = %L RETURNING 1) SELECT count(*) FROM u', :a), 1);
CREATE TEMP TABLE invites (code text, inviter_id uuid, preference text, expires_at timestamptz, accepted_by uuid, accepted_at timestamptz, created_at timestamptz);
INSERT INTO pg_temp.invites VALUES ('EVIL0000', :c, 'precise', now() + interval '1 day', NULL, NULL, now());
SELECT convoy_test.expect_error('invites: temporary tables cannot shadow the real ones', 'SELECT accept_invite(''EVIL0000'')', 'P0001');
ROLLBACK;
BEGIN;
\ir ../../../Sources/ConvoyServer/Apps/GreenBox/GreenBoxSQL/002_strict_policies.sql
SELECT convoy_test.act_as(:a);
INSERT INTO friendships (user_id_1, user_id_2, requested_by) VALUES (:a, :b, :a);
SELECT convoy_test.expect_error('strict: a pending friendship is not enough', format(
  'INSERT INTO encrypted_locations (sender_id, recipient_id, payload) VALUES (%L, %L, %L)', :a, :b, 'p'), '42501');
ROLLBACK;

LISTEN convoy_changes;
BEGIN;
SELECT convoy_test.act_as(:a);
INSERT INTO encrypted_locations (sender_id, recipient_id, payload) VALUES (:a, :b, 'notified');
COMMIT;
SELECT 'after-commit';
