-- The platform's part of the PostgreSQL store, as Supabase sets a project up,
-- whatever the app: roles anon / authenticated / service_role, auth.uid()
-- read from request.jwt.claims, GoTrue's tables, the one-statement request
-- (auth.request) and Realtime's plumbing (notify_change, auth.readers,
-- auth.attach_realtime). Each request is one statement,
-- `SELECT auth.request(role, claims, now, statement, params)`, which in that
-- statement's transaction does `set_config('role', role, true)` (SET LOCAL
-- ROLE) and `set_config('request.jwt.claims', claims, true)`, then runs it.
-- `convoy serve` applies this file once per database (again only when a build
-- changes it), then the app's own SQL (Sources/ConvoyServer/Apps/<App>/).
-- Every statement is idempotent, so a database set up before the platform and
-- the app had files of their own is brought up to date in place.

-- Roles -----------------------------------------------------------------------
-- Roles belong to the cluster: a server migrating another database at the same
-- moment may create them first (unique_violation once its transaction commits).
DO $$ BEGIN CREATE ROLE anon NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
DO $$ BEGIN CREATE ROLE authenticated NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
DO $$ BEGIN CREATE ROLE service_role NOLOGIN BYPASSRLS; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;

-- auth ------------------------------------------------------------------------
CREATE SCHEMA IF NOT EXISTS auth;

CREATE OR REPLACE FUNCTION auth.claims() RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT coalesce(nullif(current_setting('request.jwt.claims', true), ''), '{}')::jsonb
$$;
CREATE OR REPLACE FUNCTION auth.uid() RETURNS uuid LANGUAGE sql STABLE AS $$
  SELECT nullif(auth.claims() ->> 'sub', '')::uuid
$$;
-- Supabase's auth.jwt(): the request's claims (migrations written for Supabase use it).
CREATE OR REPLACE FUNCTION auth.jwt() RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT auth.claims()
$$;
CREATE OR REPLACE FUNCTION auth.role() RETURNS text LANGUAGE sql STABLE AS $$
  SELECT coalesce(auth.claims() ->> 'role', 'anon')
$$;
-- The server's clock: `convoy serve` sets request.now in each transaction from
-- its own (injectable) clock, so tests run in compressed time; other clients
-- get the database's now().
CREATE OR REPLACE FUNCTION auth.now() RETURNS timestamptz LANGUAGE sql STABLE AS $$
  SELECT coalesce(nullif(current_setting('request.now', true), '')::timestamptz, now())
$$;

CREATE TABLE IF NOT EXISTS auth.users (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  email text UNIQUE,
  password_hash text,
  is_anonymous boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  last_sign_in_at timestamptz
);
CREATE TABLE IF NOT EXISTS auth.sessions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES auth.users(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked boolean NOT NULL DEFAULT false
);
CREATE TABLE IF NOT EXISTS auth.refresh_tokens (
  token text PRIMARY KEY,
  session_id uuid NOT NULL REFERENCES auth.sessions(id) ON DELETE CASCADE,
  user_id uuid NOT NULL,
  parent text,
  revoked boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Server settings the apps' SQL reads (users cannot read or write them).
CREATE TABLE IF NOT EXISTS auth.convoy_settings (key text PRIMARY KEY, value text NOT NULL);

-- Grants: the API roles may use the schemas; RLS decides which rows. ----------
GRANT USAGE ON SCHEMA public, auth TO anon, authenticated, service_role;
GRANT EXECUTE ON FUNCTION auth.uid(), auth.role(), auth.claims(), auth.jwt(), auth.now() TO anon, authenticated, service_role;
-- As on Supabase: tables that later migrations add are open to the API roles,
-- and RLS decides; the server's own user acts as each role per request.
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON TABLES TO anon, authenticated, service_role;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON SEQUENCES TO anon, authenticated, service_role;
DO $$ BEGIN
  IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    EXECUTE format('GRANT anon, authenticated, service_role TO %I', current_user);
  END IF;
END $$;

-- Server-stamped creation times, for the app's tables that want them (each
-- app attaches it as a trigger): users cannot post rows a purge never
-- reaches. Rules apply to the request roles; the server's own SECURITY
-- DEFINER functions run as the owner and are trusted.
CREATE OR REPLACE FUNCTION public.stamp_created_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_user IN ('anon', 'authenticated') THEN
    NEW.created_at := CASE WHEN TG_OP = 'INSERT' THEN auth.now() ELSE OLD.created_at END;
  END IF;
  RETURN NEW;
END $$;

-- One API request in one statement (so one round trip): in the statement's own
-- transaction, act as `role` with `claims` at the server's time `now`
-- (set_config(…, true) is SET LOCAL), then run `statement`, whose parameters
-- are `params[1]`, `params[2]`, … Returns the statement's one text value (JSON).
-- Only the server calls it (its owner).
CREATE OR REPLACE FUNCTION auth.request(role text, claims text, now text, statement text, params text[]) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE result text;
BEGIN
  IF role NOT IN ('anon', 'authenticated', 'service_role') THEN
    RAISE EXCEPTION 'role % is not an API role', role USING ERRCODE = '42501';
  END IF;
  PERFORM set_config('request.jwt.claims', claims, true), set_config('request.now', now, true), set_config('role', role, true);
  EXECUTE statement INTO result USING params;
  RETURN result;
END $$;
REVOKE ALL ON FUNCTION auth.request(text, text, text, text, text[]) FROM PUBLIC;

-- Realtime: every committed row change, in commit order, on one channel. Only
-- the key travels (NOTIFY payloads stop at 8000 bytes), as JSON and as text
-- (the form `convoy serve` matches rows by); the listener reads the row, and
-- for a DELETE the key is the old record, as Supabase sends it. The trigger's
-- argument names the key column.
CREATE OR REPLACE FUNCTION public.notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r jsonb := to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END);
BEGIN
  PERFORM pg_notify('convoy_changes', json_build_object(
    'table', TG_TABLE_NAME, 'type', TG_OP, 'commit_timestamp', auth.now(),
    'key', r -> coalesce(TG_ARGV[0], 'id'), 'key_text', r ->> coalesce(TG_ARGV[0], 'id'))::text);
  RETURN NULL;
END $$;

-- Realtime's RLS read: for each i, the row of `target` whose key is keys[i], as
-- claims[i] may SELECT it (its role, its claims, the server's time `now`):
-- (i, the row as JSON) for the rows it may read, nothing for the others. The
-- read and the RLS check are one statement, so what is sent is what RLS
-- allowed at that moment, as Supabase checks each subscriber. Each table has
-- its own function with static SQL (made by auth.attach_realtime), so its
-- plan is cached rather than made per check. With `guarded`, a read that fails
-- (no grant, a broken policy) returns nothing instead of failing the call; the
-- server calls it so only after an unguarded call failed (savepoints cost).
-- Only the server calls it (its owner); it leaves the role as it was.
CREATE OR REPLACE FUNCTION auth.readers(target regclass, keys text[], claims jsonb[], now text, guarded boolean DEFAULT false)
RETURNS TABLE (pos int, row_json text)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format('SELECT * FROM auth.%I($1, $2, $3, $4)', 'readers_' || target::oid) USING keys, claims, now, guarded;
END $$;
REVOKE ALL ON FUNCTION auth.readers(regclass, text[], jsonb[], text, boolean) FROM PUBLIC;

-- Realtime for a table: the NOTIFY trigger and its RLS-read function.
-- `convoy serve` calls it at start for every public table with a one-column
-- primary key (also those of --migrations); idempotent.
CREATE OR REPLACE FUNCTION auth.attach_realtime(target regclass, key_column text) RETURNS void
LANGUAGE plpgsql AS $attach$
DECLARE
  key_type text := (SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
                     WHERE a.attrelid = target AND a.attname = key_column AND NOT a.attisdropped);
  read_one text := format($c$
        convoy_role := CASE WHEN convoy_claims[convoy_i] ->> 'role' IN ('authenticated', 'service_role')
                            THEN convoy_claims[convoy_i] ->> 'role' ELSE 'anon' END;
        PERFORM set_config('request.jwt.claims', convoy_claims[convoy_i]::text, true), set_config('request.now', convoy_now, true),
                set_config('role', convoy_role, true);
        convoy_row := (SELECT row_to_json(r)::text FROM %s r WHERE r.%I = convoy_keys[convoy_i]::%s);
        PERFORM set_config('role', 'none', true);$c$, target, key_column, key_type);
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = target AND tgname = 'notify_change') THEN
    EXECUTE format('CREATE TRIGGER notify_change AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION public.notify_change(%L)',
                   target, key_column);
  END IF;
  EXECUTE format($f$
    CREATE OR REPLACE FUNCTION auth.%I(convoy_keys text[], convoy_claims jsonb[], convoy_now text, convoy_guarded boolean)
    RETURNS TABLE (pos int, row_json text) LANGUAGE plpgsql AS $body$
    DECLARE convoy_i int; convoy_row text; convoy_role text;
    BEGIN
      FOR convoy_i IN 1 .. coalesce(array_length(convoy_keys, 1), 0) LOOP
        IF convoy_guarded THEN
          BEGIN %s
          EXCEPTION WHEN OTHERS THEN convoy_row := NULL;
          END;
        ELSE %s
        END IF;
        IF convoy_row IS NOT NULL THEN
          pos := convoy_i; row_json := convoy_row;
          RETURN NEXT;
        END IF;
      END LOOP;
    END $body$ $f$, 'readers_' || target::oid, read_one, read_one);
  EXECUTE format('REVOKE ALL ON FUNCTION auth.%I(text[], jsonb[], text, boolean) FROM PUBLIC', 'readers_' || target::oid);
END $attach$;
REVOKE ALL ON FUNCTION auth.attach_realtime(regclass, text) FROM PUBLIC;

-- Supabase Realtime streams the tables in this publication; an app's SQL for a
-- Supabase project adds its tables to it (`convoy schema`). convoy serve streams
-- every table it attaches, published or not; the publication is here so that
-- such SQL applies to its database as it does to Supabase's.
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = 'supabase_realtime') THEN
    CREATE PUBLICATION supabase_realtime;
  END IF;
EXCEPTION WHEN insufficient_privilege THEN
  RAISE NOTICE 'no supabase_realtime publication (the server''s user may not create one); SQL that publishes tables will fail here';
END $$;
