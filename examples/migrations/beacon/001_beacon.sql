-- Beacon: an app invented for docs/apps.md, declared in examples/apps/beacon.yaml.
-- It differs from Green Box on every axis a declared app can: keys are rows of a
-- devices table, one per phone, in hex, read through a function (beacon_keys);
-- a leader invites, the follower opens the invite through a function
-- (beacon_invite) and asks to follow, and the leader accepts, all before the
-- timeline, with statuses asked and accepted; only the leader shares (its
-- beacons go to its followers, never the other way); a tick's updates go in one
-- insert, each sealed box in hex and its time written by the phone; the plaintext
-- nests a position, milliseconds, motion and the battery; phones hear beacons
-- for them on their own topic; and the server deletes beacons older than two
-- minutes.
--
-- convoy serve --app-file examples/apps/beacon.yaml serves it on SQLite (the
-- default) or PostgreSQL (--database postgres://…); on a Supabase project,
-- apply this file as it is.

CREATE TABLE public.devices (
  device_id uuid PRIMARY KEY,
  owner_id uuid NOT NULL,
  box_key_hex text NOT NULL CHECK (length(box_key_hex) = 64),
  registered_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX devices_by_owner ON public.devices (owner_id, registered_at);

-- An invite: its id is the link a leader shares. Only its owner reads it; whoever holds the id asks beacon_invite.
CREATE TABLE public.invites (
  invite_id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  owner_id uuid NOT NULL,
  made_at timestamptz NOT NULL DEFAULT now()
);

-- A follower follows a leader: asked by redeeming the leader's invite, accepted by the leader.
CREATE TABLE public.follows (
  follow_id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  leader uuid NOT NULL,
  follower uuid NOT NULL,
  invite_id uuid NOT NULL,
  state text NOT NULL DEFAULT 'asked' CHECK (state IN ('asked', 'accepted')),
  accepted_at timestamptz
);

CREATE TABLE public.beacons (
  beacon_id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  from_user uuid NOT NULL,
  to_user uuid NOT NULL,
  box_hex text NOT NULL,
  sent_at timestamptz NOT NULL
);
CREATE INDEX beacons_for ON public.beacons (to_user, beacon_id);

GRANT ALL ON public.devices, public.invites, public.follows, public.beacons TO authenticated, service_role;

-- Whether `fan` follows `star`: it asked, and the one followed accepted. One way only.
CREATE OR REPLACE FUNCTION public.beacon_follows(fan uuid, star uuid) RETURNS boolean
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
  SELECT EXISTS (SELECT 1 FROM public.follows
                 WHERE state = 'accepted' AND follower = fan AND leader = star)
$$;

-- Whether `invite` is `owner`'s invite (a follow asks the leader whose invite it redeems).
CREATE OR REPLACE FUNCTION public.beacon_invited(invite uuid, owner uuid) RETURNS boolean
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
  SELECT EXISTS (SELECT 1 FROM public.invites WHERE invite_id = invite AND owner_id = owner)
$$;

-- The invite whose id the caller holds, to open the link: whose it is. Rows, as PostgREST answers a set.
CREATE OR REPLACE FUNCTION public.beacon_invite(invite uuid) RETURNS SETOF public.invites
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
  SELECT * FROM public.invites WHERE invite_id = invite
$$;

-- The device keys of the users asked for, oldest device first (the newest is sealed to). Devices are their owner's
-- alone to read; their keys are what anyone may ask.
CREATE OR REPLACE FUNCTION public.beacon_keys(ids uuid[]) RETURNS SETOF public.devices
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
  SELECT * FROM public.devices WHERE owner_id = ANY (ids) ORDER BY registered_at
$$;

ALTER TABLE public.devices ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.invites ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.follows ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.beacons ENABLE ROW LEVEL SECURITY;

-- A user registers devices as itself and reads its own (others' keys: beacon_keys).
CREATE POLICY "devices of mine" ON public.devices FOR SELECT TO authenticated USING (owner_id = auth.uid());
CREATE POLICY "devices are registered by their owner" ON public.devices FOR INSERT TO authenticated
  WITH CHECK (owner_id = auth.uid());

-- An invite is made and read by its owner alone.
CREATE POLICY "invites I make" ON public.invites FOR INSERT TO authenticated WITH CHECK (owner_id = auth.uid());
CREATE POLICY "invites of mine" ON public.invites FOR SELECT TO authenticated USING (owner_id = auth.uid());

-- A follow is seen by both; asked by the follower, with the leader's invite; accepted by the leader alone.
CREATE POLICY "follows of mine" ON public.follows FOR SELECT TO authenticated USING (auth.uid() IN (leader, follower));
CREATE POLICY "follows I ask" ON public.follows FOR INSERT TO authenticated
  WITH CHECK (follower = auth.uid() AND state = 'asked' AND public.beacon_invited(invite_id, leader));
CREATE POLICY "follows I accept" ON public.follows FOR UPDATE TO authenticated
  USING (leader = auth.uid()) WITH CHECK (leader = auth.uid());

-- A beacon goes from its sender to a follower of the sender's, and is read by its recipient only.
CREATE POLICY "beacons to followers" ON public.beacons FOR INSERT TO authenticated
  WITH CHECK (from_user = auth.uid() AND public.beacon_follows(to_user, from_user));
CREATE POLICY "beacons for me" ON public.beacons FOR SELECT TO authenticated USING (to_user = auth.uid());

ALTER PUBLICATION supabase_realtime ADD TABLE public.follows, public.beacons;
