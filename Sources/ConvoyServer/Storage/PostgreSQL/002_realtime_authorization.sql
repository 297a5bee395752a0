-- Realtime Authorization (private channels), as Supabase has it: the table
-- `realtime.messages` whose row-level security policies an app writes, and
-- `realtime.topic()`, the channel being checked. Supabase's table is
-- partitioned by day and also holds the broadcasts sent from the database;
-- convoy serve only ever writes probe rows into it and rolls them back, so one
-- plain table with the same columns does. Idempotent.
CREATE SCHEMA IF NOT EXISTS realtime;
GRANT USAGE ON SCHEMA realtime TO anon, authenticated, service_role;

CREATE TABLE IF NOT EXISTS realtime.messages (
  id uuid NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
  topic text NOT NULL,
  extension text NOT NULL,
  payload jsonb,
  event text,
  private boolean DEFAULT false,
  updated_at timestamp without time zone NOT NULL DEFAULT now(),
  inserted_at timestamp without time zone NOT NULL DEFAULT now());
CREATE INDEX IF NOT EXISTS messages_topic ON realtime.messages (topic);
ALTER TABLE realtime.messages ENABLE ROW LEVEL SECURITY;
GRANT SELECT, INSERT, UPDATE ON realtime.messages TO anon, authenticated, service_role;

-- The channel an authorization check is about (its name, without `realtime:`).
CREATE OR REPLACE FUNCTION realtime.topic() RETURNS text LANGUAGE sql STABLE AS $$
  SELECT nullif(current_setting('realtime.topic', true), '')::text;
$$;
GRANT EXECUTE ON FUNCTION realtime.topic() TO anon, authenticated, service_role;

-- What `role` with `claims` may do on the private channel `topic`: the
-- extensions ('broadcast', 'presence') whose messages it may read (`action`
-- 'read': a probe row of each is inserted as the server, then selected as the
-- user) or insert (`action` 'write': inserted as the user, a refusal being
-- 42501), as JSON text, e.g. ["broadcast","presence"]. Everything it did is
-- rolled back (the probe rows, the role, the settings), as Supabase rolls its
-- check back: the final exception ends the block's subtransaction. Only the
-- server calls it.
CREATE OR REPLACE FUNCTION auth.channel_access(role text, claims text, now text, topic text, action text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  allowed text[] := '{}';
  probes uuid[] := ARRAY[gen_random_uuid(), gen_random_uuid()];
  extensions text[] := ARRAY['broadcast', 'presence'];
  result text;
BEGIN
  IF role NOT IN ('anon', 'authenticated', 'service_role') THEN
    RAISE EXCEPTION 'role % is not an API role', role USING ERRCODE = '42501';
  END IF;
  IF action NOT IN ('read', 'write') THEN
    RAISE EXCEPTION 'action must be read or write, got %', action USING ERRCODE = '22023';
  END IF;
  BEGIN
    IF action = 'read' THEN
      INSERT INTO realtime.messages (id, topic, extension, private)
        SELECT probes[i], topic, extensions[i], true FROM generate_series(1, 2) i;
    END IF;
    PERFORM set_config('request.jwt.claims', claims, true), set_config('request.now', now, true),
            set_config('realtime.topic', topic, true), set_config('role', role, true);
    IF action = 'read' THEN
      SELECT coalesce(array_agg(m.extension ORDER BY m.extension), '{}') INTO allowed
        FROM realtime.messages m WHERE m.id = ANY (probes);
    ELSE
      FOR i IN 1..2 LOOP
        BEGIN
          INSERT INTO realtime.messages (topic, extension, private) VALUES (topic, extensions[i], true);
          allowed := allowed || extensions[i];
        EXCEPTION WHEN insufficient_privilege THEN
          NULL;
        END;
      END LOOP;
    END IF;
    result := to_json(allowed)::text;
    RAISE EXCEPTION USING ERRCODE = 'CVYRB', MESSAGE = result;
  EXCEPTION WHEN SQLSTATE 'CVYRB' THEN
    GET STACKED DIAGNOSTICS result = MESSAGE_TEXT;
  END;
  RETURN result;
END $$;
REVOKE ALL ON FUNCTION auth.channel_access(text, text, text, text, text) FROM PUBLIC;
