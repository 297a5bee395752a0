-- Beacon: an app invented for docs/apps.md, declared in examples/apps/beacon.yaml.
-- It differs from Green Box on every axis a declared app can: keys are rows of a
-- devices table, one per phone, in hex; users "follow" with statuses asked and
-- accepted, made before the timeline, and only the one followed shares (its
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

CREATE TABLE public.follows (
  follow_id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  asker uuid NOT NULL,
  askee uuid NOT NULL,
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

GRANT ALL ON public.devices, public.follows, public.beacons TO authenticated, service_role;

-- Whether `follower` follows `followed`: it asked, and the one asked accepted. One way only.
CREATE OR REPLACE FUNCTION public.beacon_follows(follower uuid, followed uuid) RETURNS boolean
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
  SELECT EXISTS (SELECT 1 FROM public.follows
                 WHERE state = 'accepted' AND asker = follower AND askee = followed)
$$;

ALTER TABLE public.devices ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.follows ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.beacons ENABLE ROW LEVEL SECURITY;

-- Anyone signed in reads device keys; a user registers devices as itself.
CREATE POLICY "device keys are readable" ON public.devices FOR SELECT TO authenticated USING (true);
CREATE POLICY "devices are registered by their owner" ON public.devices FOR INSERT TO authenticated
  WITH CHECK (owner_id = auth.uid());

-- A follow is seen by both; asked by the asker; accepted by the askee alone.
CREATE POLICY "follows of mine" ON public.follows FOR SELECT TO authenticated USING (auth.uid() IN (asker, askee));
CREATE POLICY "follows I ask" ON public.follows FOR INSERT TO authenticated
  WITH CHECK (asker = auth.uid() AND state = 'asked');
CREATE POLICY "follows I accept" ON public.follows FOR UPDATE TO authenticated
  USING (askee = auth.uid()) WITH CHECK (askee = auth.uid());

-- A beacon goes from its sender to a follower of the sender's, and is read by its recipient only.
CREATE POLICY "beacons to followers" ON public.beacons FOR INSERT TO authenticated
  WITH CHECK (from_user = auth.uid() AND public.beacon_follows(to_user, from_user));
CREATE POLICY "beacons for me" ON public.beacons FOR SELECT TO authenticated USING (to_user = auth.uid());

ALTER PUBLICATION supabase_realtime ADD TABLE public.follows, public.beacons;
