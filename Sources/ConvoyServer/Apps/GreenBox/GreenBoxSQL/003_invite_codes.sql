-- Green Box's invite codes (`pairing: codes`, PRD §5.2–5.3 as an RPC pair):
-- create_invite gives a code, accept_invite turns it into an active
-- friendship. Applied after 001_greenbox.sql. The PRD's own pairing (a pending
-- friendship the invitee activates) needs none of this: `convoy schema
-- greenbox --pairing prd` leaves it out.

-- Server settings the RPCs read (users cannot read or write them).
INSERT INTO auth.convoy_settings VALUES ('invite_ttl', '7 days') ON CONFLICT (key) DO NOTHING;

-- The invites, readable by their inviter only. ---------------------------------
CREATE TABLE IF NOT EXISTS public.invites (
  code text PRIMARY KEY,
  inviter_id uuid NOT NULL REFERENCES public.users(id),
  preference text NOT NULL CHECK (preference IN ('precise', 'general')),
  created_at timestamptz NOT NULL DEFAULT auth.now(),
  expires_at timestamptz NOT NULL,
  accepted_by uuid REFERENCES public.users(id),
  accepted_at timestamptz
);
GRANT SELECT ON public.invites TO anon;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.invites TO authenticated, service_role;
ALTER TABLE public.invites ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS invites_select ON public.invites;
CREATE POLICY invites_select ON public.invites FOR SELECT TO authenticated USING (inviter_id = auth.uid());

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

-- Realtime on invites (keyed by code).
DO $$ BEGIN
  PERFORM auth.attach_realtime('public.invites'::regclass, 'code');
END $$;
