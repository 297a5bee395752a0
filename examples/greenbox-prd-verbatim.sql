-- Green Box as its PRD writes it (../shared/seeds/greenbox-prd.md §3), and
-- nothing more: the three tables with exactly the PRD's columns (§3.1), the
-- row-level security of §3.2, and the Realtime publication §4.4 subscribes to.
-- No sharing-preference columns (the PRD keeps "fuzzy" per friend on the
-- device, §4.4 step 2b), no invite codes, no triggers, no purge function.
--
-- This is what a team that built Green Box to its PRD has; `convoy run
-- scenarios/greenbox-prd.yaml` (payload: prd, pairing: prd) runs against it.
-- A test applies it with psql to a database `convoy serve --app-schema
-- database` prepared and runs that scenario (GreenBoxPRDScenarioTests).
--
-- §3.2 names one policy per table for users and friendships; the flows of §4.1
-- and §5 need three more, each marked "implied" below with the step that needs
-- it: without them no phone could publish its key or pair.
--
-- What Supabase's own set-up gives every project is assumed: the anon,
-- authenticated and service_role roles, auth.users, auth.uid() and the
-- supabase_realtime publication. The grants are Supabase's default privileges
-- for tables in public, spelt out.

-- §3.1 Database schema ------------------------------------------------------------
CREATE TABLE public.users (
  id uuid PRIMARY KEY REFERENCES auth.users (id),
  created_at timestamptz NOT NULL,
  full_name text,
  avatar_url text,
  public_key text NOT NULL
);

CREATE TABLE public.friendships (
  id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  user_id_1 uuid NOT NULL REFERENCES public.users (id),
  user_id_2 uuid NOT NULL REFERENCES public.users (id),
  status text NOT NULL DEFAULT 'pending',
  requested_by uuid NOT NULL REFERENCES public.users (id)
);

CREATE TABLE public.encrypted_locations (
  id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  sender_id uuid NOT NULL REFERENCES public.users (id),
  recipient_id uuid NOT NULL REFERENCES public.users (id),
  payload text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

GRANT ALL ON public.users, public.friendships, public.encrypted_locations TO anon, authenticated, service_role;

-- §3.2 Row level security ---------------------------------------------------------
ALTER TABLE public.users ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.friendships ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.encrypted_locations ENABLE ROW LEVEL SECURITY;

-- "Any authenticated user can read public_key, full_name, avatar_url."
CREATE POLICY "users are readable" ON public.users FOR SELECT TO authenticated USING (true);
-- "A user can only update their own record."
CREATE POLICY "users update their own" ON public.users FOR UPDATE TO authenticated
  USING (id = auth.uid()) WITH CHECK (id = auth.uid());
-- Implied by §4.1 ("upload the public key to the user's row"): public_key is NOT NULL,
-- so the row cannot exist before the key does; its user inserts it.
CREATE POLICY "users insert their own" ON public.users FOR INSERT TO authenticated WITH CHECK (id = auth.uid());

-- "A user can only view rows where their ID is in user_id_1 or user_id_2."
CREATE POLICY "friendships of mine" ON public.friendships FOR SELECT TO authenticated
  USING (auth.uid() IN (user_id_1, user_id_2));
-- Implied by §5.2 (User A invites: a pending friendship requested by A).
CREATE POLICY "friendships I request" ON public.friendships FOR INSERT TO authenticated
  WITH CHECK (requested_by = auth.uid() AND auth.uid() IN (user_id_1, user_id_2));
-- Implied by §5.3 (User B accepts: the friendship becomes active).
CREATE POLICY "friendships I am in" ON public.friendships FOR UPDATE TO authenticated
  USING (auth.uid() IN (user_id_1, user_id_2)) WITH CHECK (auth.uid() IN (user_id_1, user_id_2));

-- "INSERT: A user can only insert a row where sender_id is their own user ID."
CREATE POLICY "locations I send" ON public.encrypted_locations FOR INSERT TO authenticated
  WITH CHECK (sender_id = auth.uid());
-- "SELECT: A user can only select rows where recipient_id is their own user ID."
CREATE POLICY "locations sent to me" ON public.encrypted_locations FOR SELECT TO authenticated
  USING (recipient_id = auth.uid());

-- §4.4 "Use Supabase Realtime to subscribe to INSERT events on encrypted_locations";
-- §5.3's "[User A] has invited you!" comes the same way, from friendships.
ALTER PUBLICATION supabase_realtime ADD TABLE public.encrypted_locations, public.friendships;
