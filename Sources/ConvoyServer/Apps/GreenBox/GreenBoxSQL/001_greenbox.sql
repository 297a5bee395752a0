-- Green Box (greenbox-prd.md §3) for PostgreSQL: the PRD's tables, their
-- row-level security, the rules no policy can express and the retention purge
-- (the invite codes `pairing: codes` uses are 003_invite_codes.sql). Applied after the platform's SQL
-- (Sources/ConvoyServer/Storage/PostgreSQL/000_platform.sql: roles, auth,
-- auth.request, Realtime's plumbing), once per database (again only when a
-- build changes it). The SQLite store reads its tables and policies from this
-- file too (SQLTables, SQLPolicies); the trigger's rules are GreenBoxServer+Policies.swift's.

-- public: the PRD's tables ----------------------------------------------------
CREATE TABLE IF NOT EXISTS public.users (
  id uuid PRIMARY KEY REFERENCES auth.users(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT auth.now(),
  full_name text,
  avatar_url text,
  public_key text NOT NULL
);
CREATE TABLE IF NOT EXISTS public.friendships (
  id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  user_id_1 uuid NOT NULL REFERENCES public.users(id),
  user_id_2 uuid NOT NULL REFERENCES public.users(id),
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'active')),
  requested_by uuid NOT NULL REFERENCES public.users(id),
  preference_1 text CHECK (preference_1 IN ('precise', 'general')),  -- what user 1 shares with user 2
  preference_2 text CHECK (preference_2 IN ('precise', 'general')),  -- and the other way round
  created_at timestamptz NOT NULL DEFAULT auth.now(),
  CHECK (user_id_1 <> user_id_2)
);
CREATE INDEX IF NOT EXISTS friendships_user_1 ON public.friendships (user_id_1);
CREATE INDEX IF NOT EXISTS friendships_user_2 ON public.friendships (user_id_2);
CREATE TABLE IF NOT EXISTS public.encrypted_locations (
  id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  sender_id uuid NOT NULL REFERENCES public.users(id),
  recipient_id uuid NOT NULL REFERENCES public.users(id),
  payload text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT auth.now()
);
CREATE INDEX IF NOT EXISTS encrypted_locations_recipient ON public.encrypted_locations (recipient_id, created_at);
CREATE INDEX IF NOT EXISTS encrypted_locations_created ON public.encrypted_locations (created_at);
CREATE TABLE IF NOT EXISTS public.purge_log (
  id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  ran_at timestamptz NOT NULL,
  deleted bigint NOT NULL,
  cutoff timestamptz NOT NULL
);

-- Grants: what each role may attempt; RLS decides which rows. -------------------
GRANT SELECT ON public.users, public.friendships, public.encrypted_locations, public.purge_log TO anon;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.users, public.friendships, public.encrypted_locations, public.purge_log
  TO authenticated, service_role;

-- Row-level security (PRD §3.2) -------------------------------------------------
ALTER TABLE public.users ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.friendships ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.encrypted_locations ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.purge_log ENABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS users_select ON public.users;
CREATE POLICY users_select ON public.users FOR SELECT TO authenticated USING (true);
DROP POLICY IF EXISTS users_insert ON public.users;
CREATE POLICY users_insert ON public.users FOR INSERT TO authenticated WITH CHECK (id = auth.uid());
DROP POLICY IF EXISTS users_update ON public.users;
CREATE POLICY users_update ON public.users FOR UPDATE TO authenticated USING (id = auth.uid()) WITH CHECK (id = auth.uid());

DROP POLICY IF EXISTS friendships_select ON public.friendships;
CREATE POLICY friendships_select ON public.friendships FOR SELECT TO authenticated
  USING (auth.uid() IN (user_id_1, user_id_2));
DROP POLICY IF EXISTS friendships_insert ON public.friendships;
CREATE POLICY friendships_insert ON public.friendships FOR INSERT TO authenticated
  WITH CHECK (requested_by = auth.uid() AND status = 'pending' AND auth.uid() IN (user_id_1, user_id_2)
              AND (CASE WHEN auth.uid() = user_id_1 THEN preference_2 ELSE preference_1 END) IS NULL);
DROP POLICY IF EXISTS friendships_update ON public.friendships;
CREATE POLICY friendships_update ON public.friendships FOR UPDATE TO authenticated
  USING (auth.uid() IN (user_id_1, user_id_2)) WITH CHECK (auth.uid() IN (user_id_1, user_id_2));
DROP POLICY IF EXISTS friendships_delete ON public.friendships;
CREATE POLICY friendships_delete ON public.friendships FOR DELETE TO authenticated
  USING (auth.uid() IN (user_id_1, user_id_2));

DROP POLICY IF EXISTS encrypted_locations_insert ON public.encrypted_locations;
CREATE POLICY encrypted_locations_insert ON public.encrypted_locations FOR INSERT TO authenticated
  WITH CHECK (sender_id = auth.uid());
DROP POLICY IF EXISTS encrypted_locations_select ON public.encrypted_locations;
CREATE POLICY encrypted_locations_select ON public.encrypted_locations FOR SELECT TO authenticated
  USING (recipient_id = auth.uid());

-- purge_log: no policy, so only the service role (BYPASSRLS) reads it.

-- Rules no policy can express -------------------------------------------------
-- Server-stamped creation times (the platform's public.stamp_created_at): users
-- cannot post rows the purge never reaches.
DO $$ DECLARE t text; BEGIN
  FOREACH t IN ARRAY ARRAY['users', 'friendships', 'encrypted_locations'] LOOP
    EXECUTE format('DROP TRIGGER IF EXISTS stamp_created_at ON public.%I', t);
    EXECUTE format('CREATE TRIGGER stamp_created_at BEFORE INSERT OR UPDATE ON public.%I FOR EACH ROW EXECUTE FUNCTION public.stamp_created_at()', t);
  END LOOP;
END $$;

-- Friendships: members and requester fixed, only the invitee activates, each
-- member sets only their own preference.
CREATE OR REPLACE FUNCTION public.guard_friendship() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_user NOT IN ('anon', 'authenticated') THEN RETURN NEW; END IF;
  IF NEW.user_id_1 <> OLD.user_id_1 OR NEW.user_id_2 <> OLD.user_id_2 OR NEW.requested_by <> OLD.requested_by THEN
    RAISE EXCEPTION 'members and requester cannot be changed' USING ERRCODE = '42501';
  END IF;
  IF OLD.status <> 'active' AND NEW.status = 'active' AND OLD.requested_by = auth.uid() THEN
    RAISE EXCEPTION 'only the invited member can accept a friendship' USING ERRCODE = '42501';
  END IF;
  IF (auth.uid() = OLD.user_id_1 AND NEW.preference_2 IS DISTINCT FROM OLD.preference_2)
     OR (auth.uid() = OLD.user_id_2 AND NEW.preference_1 IS DISTINCT FROM OLD.preference_1) THEN
    RAISE EXCEPTION 'each member sets only their own sharing preference' USING ERRCODE = '42501';
  END IF;
  RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS guard_friendship ON public.friendships;
CREATE TRIGGER guard_friendship BEFORE UPDATE ON public.friendships FOR EACH ROW EXECUTE FUNCTION public.guard_friendship();

-- Retention (PRD §3.3) ------------------------------------------------------------
CREATE OR REPLACE FUNCTION public.purge_old_locations(retention interval DEFAULT '10 minutes') RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE n bigint; cut timestamptz := auth.now() - retention;
BEGIN
  DELETE FROM encrypted_locations WHERE created_at < cut;
  GET DIAGNOSTICS n = ROW_COUNT;
  INSERT INTO purge_log (ran_at, deleted, cutoff) VALUES (auth.now(), n, cut);
  RETURN n;
END $$;
REVOKE ALL ON FUNCTION public.purge_old_locations(interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.purge_old_locations(interval) TO service_role;

-- Realtime on its tables (convoy serve also attaches every public table with a
-- one-column key at start; here so the schema is complete when applied by hand).
DO $$ BEGIN
  PERFORM auth.attach_realtime(format('public.%I', t)::regclass, 'id')
     FROM unnest(ARRAY['users', 'friendships', 'encrypted_locations']) t;
END $$;
