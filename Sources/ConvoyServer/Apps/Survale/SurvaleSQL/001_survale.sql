-- Survale (survale-spec.md) for PostgreSQL: agencies, teams and their users;
-- operations (draft → active → ended) with members, invites and join requests,
-- targets and staging areas; operation chat (op_messages) and the location
-- archive for replay; row-level security on all of them and on Realtime's
-- private channels op_{id}_locations and op_{id}_chat; the RPCs of the
-- operation lifecycle; auto-end and the 7-day purge. Applied after the
-- platform's SQL (000_platform.sql, 002_realtime_authorization.sql), once per
-- database (again when a build changes it). The SQLite store reads its tables and
-- policies from this file too (SQLTables, SQLPolicies); its triggers' rules and its
-- RPCs are mirrored in SurvaleServer+Policies.swift and SurvaleRPC.swift. Idempotent.

-- Tables -------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS public.agencies (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT auth.now()
);
CREATE TABLE IF NOT EXISTS public.teams (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  agency_id uuid NOT NULL REFERENCES public.agencies(id) ON DELETE CASCADE,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT auth.now(),
  UNIQUE (id, agency_id)
);
-- Users are provisioned by the agency (the service role): one primary team each.
CREATE TABLE IF NOT EXISTS public.users (
  id uuid PRIMARY KEY REFERENCES auth.users(id) ON DELETE CASCADE,
  team_id uuid NOT NULL,
  agency_id uuid NOT NULL,
  callsign text NOT NULL,
  vehicle_type text NOT NULL DEFAULT 'sedan' CHECK (vehicle_type IN ('sedan', 'suv', 'pickup')),
  vehicle_color text NOT NULL DEFAULT 'blue',
  created_at timestamptz NOT NULL DEFAULT auth.now(),
  FOREIGN KEY (team_id, agency_id) REFERENCES public.teams(id, agency_id)
);
CREATE TABLE IF NOT EXISTS public.operations (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  agency_id uuid NOT NULL,
  team_id uuid NOT NULL,
  case_agent_id uuid NOT NULL REFERENCES public.users(id),
  name text NOT NULL,
  incident_number text,
  status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'active', 'ended')),
  created_at timestamptz NOT NULL DEFAULT auth.now(),
  started_at timestamptz,
  ended_at timestamptz,
  end_reason text CHECK (end_reason IN ('case_agent', 'auto_end')),
  -- Every member has been off the operation's channels since (active operations; null: someone is on).
  idle_since timestamptz,
  FOREIGN KEY (team_id, agency_id) REFERENCES public.teams(id, agency_id)
);
CREATE INDEX IF NOT EXISTS operations_status ON public.operations (status);
CREATE TABLE IF NOT EXISTS public.operation_members (
  id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  operation_id uuid NOT NULL REFERENCES public.operations(id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES public.users(id),
  role text NOT NULL DEFAULT 'member' CHECK (role IN ('case_agent', 'member')),
  joined_at timestamptz NOT NULL DEFAULT auth.now(),
  left_at timestamptz,
  UNIQUE (operation_id, user_id)
);
CREATE INDEX IF NOT EXISTS operation_members_user ON public.operation_members (user_id);
CREATE TABLE IF NOT EXISTS public.operation_invites (
  id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  operation_id uuid NOT NULL REFERENCES public.operations(id) ON DELETE CASCADE,
  invitee_id uuid NOT NULL REFERENCES public.users(id),
  invited_by uuid NOT NULL REFERENCES public.users(id),
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'declined')),
  created_at timestamptz NOT NULL DEFAULT auth.now(),
  decided_at timestamptz,
  UNIQUE (operation_id, invitee_id)
);
CREATE INDEX IF NOT EXISTS operation_invites_invitee ON public.operation_invites (invitee_id);
CREATE TABLE IF NOT EXISTS public.join_requests (
  id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  operation_id uuid NOT NULL REFERENCES public.operations(id) ON DELETE CASCADE,
  requester_id uuid NOT NULL REFERENCES public.users(id),
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied')),
  created_at timestamptz NOT NULL DEFAULT auth.now(),
  decided_by uuid REFERENCES public.users(id),
  decided_at timestamptz
);
-- One pending request per member and operation: a member who left may ask again.
ALTER TABLE public.join_requests DROP CONSTRAINT IF EXISTS join_requests_operation_id_requester_id_key;
CREATE UNIQUE INDEX IF NOT EXISTS join_requests_one_pending ON public.join_requests (operation_id, requester_id) WHERE status = 'pending';
CREATE TABLE IF NOT EXISTS public.targets (
  id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  operation_id uuid NOT NULL REFERENCES public.operations(id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('person', 'vehicle', 'location')),
  label text NOT NULL,
  lat double precision,
  lon double precision,
  created_by uuid NOT NULL REFERENCES public.users(id),
  created_at timestamptz NOT NULL DEFAULT auth.now()
);
CREATE TABLE IF NOT EXISTS public.staging_areas (
  id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  operation_id uuid NOT NULL REFERENCES public.operations(id) ON DELETE CASCADE,
  label text NOT NULL,
  lat double precision NOT NULL,
  lon double precision NOT NULL,
  created_at timestamptz NOT NULL DEFAULT auth.now()
);
CREATE TABLE IF NOT EXISTS public.op_messages (
  id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  operation_id uuid NOT NULL REFERENCES public.operations(id) ON DELETE CASCADE,
  sender_id uuid NOT NULL REFERENCES public.users(id),
  body text NOT NULL DEFAULT '',
  media_path text,
  created_at timestamptz NOT NULL DEFAULT auth.now()
);
CREATE INDEX IF NOT EXISTS op_messages_operation ON public.op_messages (operation_id, id);
CREATE TABLE IF NOT EXISTS public.locations_archive (
  id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  operation_id uuid NOT NULL REFERENCES public.operations(id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES public.users(id),
  lat double precision NOT NULL,
  lon double precision NOT NULL,
  accuracy double precision,
  heading double precision,
  speed double precision,
  -- 'reduced': a GPS-denied fix from Wi-Fi or cell (the app's "reduced accuracy" badge).
  fix text NOT NULL DEFAULT 'gps' CHECK (fix IN ('gps', 'reduced')),
  recorded_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT auth.now()
);
CREATE INDEX IF NOT EXISTS locations_archive_operation ON public.locations_archive (operation_id, recorded_at);
CREATE TABLE IF NOT EXISTS public.purge_log (
  id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  ran_at timestamptz NOT NULL,
  deleted bigint NOT NULL,
  cutoff timestamptz NOT NULL
);

-- Grants: what each role may attempt; RLS decides which rows. -----------------------
DO $$ DECLARE t text; BEGIN
  FOREACH t IN ARRAY ARRAY['agencies', 'teams', 'users', 'operations', 'operation_members', 'operation_invites',
                           'join_requests', 'targets', 'staging_areas', 'op_messages', 'locations_archive', 'purge_log'] LOOP
    EXECUTE format('GRANT SELECT ON public.%I TO anon', t);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON public.%I TO authenticated, service_role', t);
    EXECUTE format('ALTER TABLE public.%I ENABLE ROW LEVEL SECURITY', t);
  END LOOP;
END $$;

-- Who the caller is to an operation (SECURITY DEFINER: policies call them without recursing into RLS).
CREATE OR REPLACE FUNCTION public.my_agency() RETURNS uuid LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$ SELECT agency_id FROM users WHERE id = auth.uid() $$;
CREATE OR REPLACE FUNCTION public.my_team() RETURNS uuid LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$ SELECT team_id FROM users WHERE id = auth.uid() $$;
-- Was ever a member (reads the operation, its chat, archive and targets: replay after the end).
CREATE OR REPLACE FUNCTION public.is_operation_member(op uuid) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
  SELECT EXISTS (SELECT 1 FROM operation_members WHERE operation_id = op AND user_id = auth.uid())
$$;
-- Is a member now (not left) of an operation in one of `statuses`.
CREATE OR REPLACE FUNCTION public.is_current_member(op uuid, statuses text[]) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
  SELECT EXISTS (SELECT 1 FROM operation_members m JOIN operations o ON o.id = m.operation_id
                 WHERE m.operation_id = op AND m.user_id = auth.uid() AND m.left_at IS NULL AND o.status = ANY (statuses))
$$;
CREATE OR REPLACE FUNCTION public.is_case_agent(op uuid) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
  SELECT EXISTS (SELECT 1 FROM operations WHERE id = op AND case_agent_id = auth.uid())
$$;
-- The operation a channel belongs to: op_{uuid}_locations or op_{uuid}_chat; null for any other name.
CREATE OR REPLACE FUNCTION public.operation_of_topic(topic text) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
  SELECT (regexp_match(topic, '^op_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})_(locations|chat)$'))[1]::uuid
$$;
-- A pair's direct-message channel, op_{operation}_dm_{a}_{b} (user ids, a < b): true when the caller is one of
-- the two and both are current members of the active operation; null for any other name.
CREATE OR REPLACE FUNCTION public.direct_channel_allows(topic text) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
  WITH p AS (
    SELECT m[1]::uuid AS op, m[2]::uuid AS a, m[3]::uuid AS b
    FROM regexp_match(topic, '^op_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})_dm_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$') AS m
    WHERE m[2] < m[3]
  )
  SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM p) THEN NULL ELSE EXISTS (
    SELECT 1 FROM p WHERE auth.uid() IN (p.a, p.b)
      AND (SELECT count(*) FROM operation_members mm JOIN operations o ON o.id = mm.operation_id
           WHERE mm.operation_id = p.op AND mm.user_id IN (p.a, p.b) AND mm.left_at IS NULL AND o.status = 'active') = 2
  ) END
$$;
GRANT EXECUTE ON FUNCTION public.my_agency(), public.my_team(), public.is_operation_member(uuid),
  public.is_current_member(uuid, text[]), public.is_case_agent(uuid), public.operation_of_topic(text),
  public.direct_channel_allows(text) TO anon, authenticated, service_role;

-- Row-level security --------------------------------------------------------------
DROP POLICY IF EXISTS agencies_select ON public.agencies;
CREATE POLICY agencies_select ON public.agencies FOR SELECT TO authenticated USING (id = public.my_agency());
DROP POLICY IF EXISTS teams_select ON public.teams;
CREATE POLICY teams_select ON public.teams FOR SELECT TO authenticated USING (agency_id = public.my_agency());
-- Users see their agency's roster and edit their own profile (team and agency fixed: guard_user).
DROP POLICY IF EXISTS users_select ON public.users;
CREATE POLICY users_select ON public.users FOR SELECT TO authenticated USING (agency_id = public.my_agency());
DROP POLICY IF EXISTS users_update ON public.users;
CREATE POLICY users_update ON public.users FOR UPDATE TO authenticated USING (id = auth.uid()) WITH CHECK (id = auth.uid());

-- Operations: members see theirs; the team sees its operations once started (to ask to join);
-- created through create_operation; the case agent edits name and incident number (guard_operation).
DROP POLICY IF EXISTS operations_select ON public.operations;
CREATE POLICY operations_select ON public.operations FOR SELECT TO authenticated
  USING (case_agent_id = auth.uid() OR public.is_operation_member(id) OR (team_id = public.my_team() AND status <> 'draft'));
DROP POLICY IF EXISTS operations_update ON public.operations;
CREATE POLICY operations_update ON public.operations FOR UPDATE TO authenticated
  USING (case_agent_id = auth.uid()) WITH CHECK (case_agent_id = auth.uid());

DROP POLICY IF EXISTS operation_members_select ON public.operation_members;
CREATE POLICY operation_members_select ON public.operation_members FOR SELECT TO authenticated
  USING (public.is_operation_member(operation_id) OR public.is_case_agent(operation_id));

-- Invites: the case agent invites users of the agency; the invitee answers through respond_to_invite.
DROP POLICY IF EXISTS operation_invites_select ON public.operation_invites;
CREATE POLICY operation_invites_select ON public.operation_invites FOR SELECT TO authenticated
  USING (invitee_id = auth.uid() OR public.is_case_agent(operation_id));
DROP POLICY IF EXISTS operation_invites_insert ON public.operation_invites;
CREATE POLICY operation_invites_insert ON public.operation_invites FOR INSERT TO authenticated
  WITH CHECK (invited_by = auth.uid() AND status = 'pending' AND public.is_case_agent(operation_id)
              AND EXISTS (SELECT 1 FROM public.users u WHERE u.id = invitee_id AND u.agency_id = public.my_agency()));

-- Join requests: a team member asks to join a started operation; the case agent decides (decide_join_request).
DROP POLICY IF EXISTS join_requests_select ON public.join_requests;
CREATE POLICY join_requests_select ON public.join_requests FOR SELECT TO authenticated
  USING (requester_id = auth.uid() OR public.is_case_agent(operation_id));
DROP POLICY IF EXISTS join_requests_insert ON public.join_requests;
CREATE POLICY join_requests_insert ON public.join_requests FOR INSERT TO authenticated
  WITH CHECK (requester_id = auth.uid() AND status = 'pending'
              AND EXISTS (SELECT 1 FROM public.operations o WHERE o.id = operation_id AND o.team_id = public.my_team()
                          AND o.status = 'active'));

-- Targets and staging areas: members read, the case agent writes.
DROP POLICY IF EXISTS targets_select ON public.targets;
CREATE POLICY targets_select ON public.targets FOR SELECT TO authenticated USING (public.is_operation_member(operation_id));
DROP POLICY IF EXISTS targets_insert ON public.targets;
CREATE POLICY targets_insert ON public.targets FOR INSERT TO authenticated WITH CHECK (public.is_case_agent(operation_id));
DROP POLICY IF EXISTS targets_update ON public.targets;
CREATE POLICY targets_update ON public.targets FOR UPDATE TO authenticated
  USING (public.is_case_agent(operation_id)) WITH CHECK (public.is_case_agent(operation_id));
DROP POLICY IF EXISTS targets_delete ON public.targets;
CREATE POLICY targets_delete ON public.targets FOR DELETE TO authenticated USING (public.is_case_agent(operation_id));
DROP POLICY IF EXISTS staging_areas_select ON public.staging_areas;
CREATE POLICY staging_areas_select ON public.staging_areas FOR SELECT TO authenticated USING (public.is_operation_member(operation_id));
DROP POLICY IF EXISTS staging_areas_insert ON public.staging_areas;
CREATE POLICY staging_areas_insert ON public.staging_areas FOR INSERT TO authenticated WITH CHECK (public.is_case_agent(operation_id));
DROP POLICY IF EXISTS staging_areas_update ON public.staging_areas;
CREATE POLICY staging_areas_update ON public.staging_areas FOR UPDATE TO authenticated
  USING (public.is_case_agent(operation_id)) WITH CHECK (public.is_case_agent(operation_id));
DROP POLICY IF EXISTS staging_areas_delete ON public.staging_areas;
CREATE POLICY staging_areas_delete ON public.staging_areas FOR DELETE TO authenticated USING (public.is_case_agent(operation_id));

-- Chat and the archive: members read (also after the end, for replay); a current member of an
-- active operation writes, as itself.
DROP POLICY IF EXISTS op_messages_select ON public.op_messages;
CREATE POLICY op_messages_select ON public.op_messages FOR SELECT TO authenticated USING (public.is_operation_member(operation_id));
DROP POLICY IF EXISTS op_messages_insert ON public.op_messages;
CREATE POLICY op_messages_insert ON public.op_messages FOR INSERT TO authenticated
  WITH CHECK (sender_id = auth.uid() AND public.is_current_member(operation_id, ARRAY['active']));
DROP POLICY IF EXISTS locations_archive_select ON public.locations_archive;
CREATE POLICY locations_archive_select ON public.locations_archive FOR SELECT TO authenticated
  USING (public.is_operation_member(operation_id));
DROP POLICY IF EXISTS locations_archive_insert ON public.locations_archive;
CREATE POLICY locations_archive_insert ON public.locations_archive FOR INSERT TO authenticated
  WITH CHECK (user_id = auth.uid() AND public.is_current_member(operation_id, ARRAY['active']));
-- purge_log: no policy, so only the service role reads it.

-- Realtime Authorization: an operation's private channels (op_{id}_locations, op_{id}_chat) are
-- read by its current members while it is not ended, and written (broadcast, presence) by them
-- while it is active. Supabase computes these at the join and at each token refresh.
DROP POLICY IF EXISTS survale_channels_read ON realtime.messages;
CREATE POLICY survale_channels_read ON realtime.messages FOR SELECT TO authenticated
  USING (public.is_current_member(public.operation_of_topic(realtime.topic()), ARRAY['draft', 'active']));
DROP POLICY IF EXISTS survale_channels_write ON realtime.messages;
CREATE POLICY survale_channels_write ON realtime.messages FOR INSERT TO authenticated
  WITH CHECK (extension IN ('broadcast', 'presence')
              AND public.is_current_member(public.operation_of_topic(realtime.topic()), ARRAY['active']));
-- Direct messages (spec §6: "DMs via ephemeral WebSocket relay (no storage)"): a pair's channel is the two's.
DROP POLICY IF EXISTS survale_direct_read ON realtime.messages;
CREATE POLICY survale_direct_read ON realtime.messages FOR SELECT TO authenticated
  USING (public.direct_channel_allows(realtime.topic()));
DROP POLICY IF EXISTS survale_direct_write ON realtime.messages;
CREATE POLICY survale_direct_write ON realtime.messages FOR INSERT TO authenticated
  WITH CHECK (extension = 'broadcast' AND public.direct_channel_allows(realtime.topic()));

-- Rules no policy can express -------------------------------------------------------
DO $$ DECLARE t text; BEGIN
  FOREACH t IN ARRAY ARRAY['users', 'operations', 'operation_invites', 'join_requests', 'targets', 'staging_areas',
                           'op_messages', 'locations_archive'] LOOP
    EXECUTE format('DROP TRIGGER IF EXISTS stamp_created_at ON public.%I', t);
    EXECUTE format('CREATE TRIGGER stamp_created_at BEFORE INSERT OR UPDATE ON public.%I FOR EACH ROW EXECUTE FUNCTION public.stamp_created_at()', t);
  END LOOP;
END $$;

-- A user's team and agency are the agency's to set.
CREATE OR REPLACE FUNCTION public.guard_user() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_user NOT IN ('anon', 'authenticated') THEN RETURN NEW; END IF;
  IF NEW.id <> OLD.id OR NEW.team_id <> OLD.team_id OR NEW.agency_id <> OLD.agency_id THEN
    RAISE EXCEPTION 'team and agency are set by the agency' USING ERRCODE = '42501';
  END IF;
  RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS guard_user ON public.users;
CREATE TRIGGER guard_user BEFORE UPDATE ON public.users FOR EACH ROW EXECUTE FUNCTION public.guard_user();

-- The case agent edits an operation's name and incident number; its lifecycle goes through the RPCs.
CREATE OR REPLACE FUNCTION public.guard_operation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_user NOT IN ('anon', 'authenticated') THEN RETURN NEW; END IF;
  IF (NEW.id, NEW.agency_id, NEW.team_id, NEW.case_agent_id, NEW.status, NEW.started_at, NEW.ended_at, NEW.end_reason, NEW.idle_since)
     IS DISTINCT FROM (OLD.id, OLD.agency_id, OLD.team_id, OLD.case_agent_id, OLD.status, OLD.started_at, OLD.ended_at, OLD.end_reason, OLD.idle_since) THEN
    RAISE EXCEPTION 'only name and incident_number can be changed; start_operation and end_operation change the status'
      USING ERRCODE = '42501';
  END IF;
  RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS guard_operation ON public.operations;
CREATE TRIGGER guard_operation BEFORE UPDATE ON public.operations FOR EACH ROW EXECUTE FUNCTION public.guard_operation();

-- Realtime on its tables (convoy serve also attaches every public table with a one-column key).
DO $$ BEGIN
  PERFORM auth.attach_realtime(format('public.%I', t)::regclass, 'id')
     FROM unnest(ARRAY['operations', 'operation_members', 'operation_invites', 'join_requests', 'op_messages']) t;
END $$;
