-- Green Box (greenbox-prd.md §3) for PostgreSQL: the PRD's tables, their
-- row-level security, the rules no policy can express, the invite RPCs and the
-- retention purge. Applied after the platform's SQL
-- (Sources/ConvoyServer/Storage/PostgreSQL/000_platform.sql: roles, auth,
-- auth.request, Realtime's plumbing), once per database (again only when a
-- build changes it). Mirrors GreenBoxPolicies.swift (the SQLite store).

-- Server settings the RPCs read (users cannot read or write them).
INSERT INTO auth.convoy_settings VALUES ('invite_ttl', '7 days') ON CONFLICT (key) DO NOTHING;

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
CREATE TABLE IF NOT EXISTS public.invites (
  code text PRIMARY KEY,
  inviter_id uuid NOT NULL REFERENCES public.users(id),
  preference text NOT NULL CHECK (preference IN ('precise', 'general')),
  created_at timestamptz NOT NULL DEFAULT auth.now(),
  expires_at timestamptz NOT NULL,
  accepted_by uuid REFERENCES public.users(id),
  accepted_at timestamptz
);
CREATE TABLE IF NOT EXISTS public.purge_log (
  id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  ran_at timestamptz NOT NULL,
  deleted bigint NOT NULL,
  cutoff timestamptz NOT NULL
);

-- Grants: what each role may attempt; RLS decides which rows. -------------------
GRANT SELECT ON public.users, public.friendships, public.encrypted_locations, public.invites, public.purge_log TO anon;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.users, public.friendships, public.encrypted_locations, public.invites, public.purge_log
  TO authenticated, service_role;

-- Row-level security (PRD §3.2) -------------------------------------------------
ALTER TABLE public.users ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.friendships ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.encrypted_locations ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.invites ENABLE ROW LEVEL SECURITY;
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

DROP POLICY IF EXISTS invites_select ON public.invites;
CREATE POLICY invites_select ON public.invites FOR SELECT TO authenticated USING (inviter_id = auth.uid());
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

-- Invites (PRD §5.2–5.3), run as the owner (SECURITY DEFINER) ---------------------
-- search_path ends with pg_temp, so a caller's temporary tables cannot shadow ours.
CREATE OR REPLACE FUNCTION public.create_invite(preference text DEFAULT 'precise') RETURNS json
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  alphabet constant text := 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';
  c text; b int; bytes bytea;
  ttl interval := coalesce((SELECT value FROM auth.convoy_settings WHERE key = 'invite_ttl'), '7 days')::interval;
  expires timestamptz := auth.now() + ttl;
BEGIN
  preference := coalesce(preference, 'precise');
  IF auth.uid() IS NULL THEN RAISE EXCEPTION 'permission denied for function create_invite' USING ERRCODE = '42501'; END IF;
  IF preference NOT IN ('precise', 'general') THEN
    RAISE EXCEPTION 'preference must be ''precise'' or ''general'', got ''%''', preference USING ERRCODE = '22023';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM users WHERE id = auth.uid()) THEN
    RAISE EXCEPTION 'create a users row (with your public key) before inviting';
  END IF;
  LOOP
    c := '';
    WHILE length(c) < 8 LOOP
      bytes := uuid_send(gen_random_uuid());
      FOR i IN 0..5 LOOP  -- the random bytes of a v4 UUID; rejection keeps letters uniform
        b := get_byte(bytes, i);
        IF b < 248 AND length(c) < 8 THEN c := c || substr(alphabet, b % 31 + 1, 1); END IF;
      END LOOP;
    END LOOP;
    BEGIN
      INSERT INTO invites (code, inviter_id, preference, expires_at) VALUES (c, auth.uid(), preference, expires);
      RETURN json_build_object('code', c, 'expires_at', expires);
    EXCEPTION WHEN unique_violation THEN NULL;
    END;
  END LOOP;
END $$;

CREATE OR REPLACE FUNCTION public.accept_invite(code text, preference text DEFAULT 'precise') RETURNS json
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE inv invites; f friendships; me uuid := auth.uid();
BEGIN
  preference := coalesce(preference, 'precise');
  IF me IS NULL THEN RAISE EXCEPTION 'permission denied for function accept_invite' USING ERRCODE = '42501'; END IF;
  IF preference NOT IN ('precise', 'general') THEN
    RAISE EXCEPTION 'preference must be ''precise'' or ''general'', got ''%''', preference USING ERRCODE = '22023';
  END IF;
  SELECT * INTO inv FROM invites i WHERE i.code = upper(accept_invite.code) FOR UPDATE;
  IF NOT FOUND OR inv.accepted_by IS NOT NULL OR inv.expires_at <= auth.now() THEN
    RAISE EXCEPTION 'invite code is invalid, expired or already used';
  END IF;
  IF inv.inviter_id = me THEN RAISE EXCEPTION 'you cannot accept your own invite'; END IF;
  IF NOT EXISTS (SELECT 1 FROM users WHERE id = me) THEN
    RAISE EXCEPTION 'create a users row (with your public key) before accepting';
  END IF;
  UPDATE invites SET accepted_by = me, accepted_at = auth.now() WHERE invites.code = inv.code;
  SELECT * INTO f FROM friendships
   WHERE (user_id_1 = inv.inviter_id AND user_id_2 = me) OR (user_id_1 = me AND user_id_2 = inv.inviter_id);
  IF FOUND THEN  -- re-accepting after a device migration
    UPDATE friendships SET status = 'active', requested_by = inv.inviter_id,
      preference_1 = CASE WHEN user_id_1 = inv.inviter_id THEN inv.preference ELSE accept_invite.preference END,
      preference_2 = CASE WHEN user_id_1 = inv.inviter_id THEN accept_invite.preference ELSE inv.preference END
     WHERE id = f.id RETURNING * INTO f;
  ELSE
    INSERT INTO friendships (user_id_1, user_id_2, status, requested_by, preference_1, preference_2)
    VALUES (inv.inviter_id, me, 'active', inv.inviter_id, inv.preference, accept_invite.preference) RETURNING * INTO f;
  END IF;
  RETURN row_to_json(f);
END $$;
REVOKE ALL ON FUNCTION public.create_invite(text), public.accept_invite(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.create_invite(text), public.accept_invite(text, text) TO authenticated;

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
  PERFORM auth.attach_realtime(format('public.%I', t)::regclass, CASE WHEN t = 'invites' THEN 'code' ELSE 'id' END)
     FROM unnest(ARRAY['users', 'friendships', 'encrypted_locations', 'invites']) t;
END $$;
