-- Huddle: a group app invented for docs/apps.md ("A group app"), declared in
-- examples/apps/huddle.yaml. A lead opens a huddle and adds the crew; each
-- phone joins the huddle's private channel `huddle:<id>`, tracks its presence
-- and broadcasts its position to the whole huddle; the lead closes it at the
-- end. Who may join, send and track on a channel is this file's policies on
-- realtime.messages (Supabase Realtime Authorization): members of the huddle
-- the topic names, nobody else.
--
-- convoy serve --app-file examples/apps/huddle.yaml serves it on SQLite (the
-- default) or PostgreSQL (--database postgres://…); on a Supabase project,
-- apply this file as it is.

CREATE TABLE public.huddles (
  huddle_id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  title text NOT NULL,
  lead_id uuid NOT NULL,
  opened_at timestamptz NOT NULL DEFAULT now(),
  closed_at timestamptz
);

CREATE TABLE public.huddle_members (
  membership_id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  huddle_id uuid NOT NULL,
  member_id uuid NOT NULL,
  added_by uuid NOT NULL
);
CREATE UNIQUE INDEX huddle_members_once ON public.huddle_members (huddle_id, member_id);
CREATE INDEX huddle_members_by_member ON public.huddle_members (member_id);

GRANT ALL ON public.huddles, public.huddle_members TO authenticated, service_role;

-- Whether the caller is in huddle `h`.
CREATE OR REPLACE FUNCTION public.in_huddle(h uuid) RETURNS boolean
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
  SELECT EXISTS (SELECT 1 FROM public.huddle_members WHERE huddle_id = h AND member_id = auth.uid())
$$;

-- Whether the caller leads huddle `h`.
CREATE OR REPLACE FUNCTION public.leads_huddle(h uuid) RETURNS boolean
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
  SELECT EXISTS (SELECT 1 FROM public.huddles WHERE huddle_id = h AND lead_id = auth.uid())
$$;

-- Whether the caller is in the huddle a Realtime channel is named after (`huddle:<id>`).
CREATE OR REPLACE FUNCTION public.in_huddle_channel(channel text) RETURNS boolean
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
  SELECT EXISTS (SELECT 1 FROM public.huddle_members
                 WHERE member_id = auth.uid() AND 'huddle:' || huddle_id::text = channel)
$$;

ALTER TABLE public.huddles ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.huddle_members ENABLE ROW LEVEL SECURITY;

-- A huddle is opened by its lead, seen by its lead and its members, closed by its lead.
CREATE POLICY "huddles I lead or am in" ON public.huddles FOR SELECT TO authenticated
  USING (lead_id = auth.uid() OR public.in_huddle(huddle_id));
CREATE POLICY "huddles I open" ON public.huddles FOR INSERT TO authenticated
  WITH CHECK (lead_id = auth.uid() AND closed_at IS NULL);
CREATE POLICY "huddles I close" ON public.huddles FOR UPDATE TO authenticated
  USING (lead_id = auth.uid()) WITH CHECK (lead_id = auth.uid());

-- The crew of a huddle is seen by its members; only its lead adds anyone (itself included).
CREATE POLICY "crews I am in" ON public.huddle_members FOR SELECT TO authenticated
  USING (public.in_huddle(huddle_id) OR public.leads_huddle(huddle_id));
CREATE POLICY "crews I lead" ON public.huddle_members FOR INSERT TO authenticated
  WITH CHECK (added_by = auth.uid() AND public.leads_huddle(huddle_id));

-- Realtime Authorization: a huddle's members hear and speak on its channel (broadcast and presence); nobody else joins it.
CREATE POLICY "huddle channel: members hear" ON realtime.messages FOR SELECT TO authenticated
  USING (realtime.messages.extension IN ('broadcast', 'presence') AND public.in_huddle_channel(realtime.topic()));
CREATE POLICY "huddle channel: members speak" ON realtime.messages FOR INSERT TO authenticated
  WITH CHECK (realtime.messages.extension IN ('broadcast', 'presence') AND public.in_huddle_channel(realtime.topic()));

ALTER PUBLICATION supabase_realtime ADD TABLE public.huddles;
