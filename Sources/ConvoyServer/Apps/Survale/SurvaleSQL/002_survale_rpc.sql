-- Survale's RPCs (the operation lifecycle), its auto-end and its purge, run
-- as the owner (SECURITY DEFINER) with every check explicit. search_path ends
-- with pg_temp, so a caller's temporary tables cannot shadow these. Mirrors
-- SurvaleRPC.swift (the SQLite store). Errors: 42501 (not yours to do) → 403,
-- P0001 (not now: a wrong status) → 400. Idempotent.

-- The caller's profile, or 42501.
CREATE OR REPLACE FUNCTION public.survale_me() RETURNS public.users
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE me users;
BEGIN
  SELECT * INTO me FROM users WHERE id = auth.uid();
  IF NOT FOUND THEN RAISE EXCEPTION 'no Survale profile for this user: the agency provisions users' USING ERRCODE = '42501'; END IF;
  RETURN me;
END $$;
REVOKE ALL ON FUNCTION public.survale_me() FROM PUBLIC;

-- The operation `op`, locked, if the caller is its case agent; else 42501 (also when there is none:
-- another agency's operation ids cannot be told apart by probing).
CREATE OR REPLACE FUNCTION public.survale_own_operation(op uuid) RETURNS public.operations
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE o operations;
BEGIN
  SELECT * INTO o FROM operations WHERE id = op FOR UPDATE;
  IF NOT FOUND OR o.case_agent_id IS DISTINCT FROM auth.uid() THEN
    RAISE EXCEPTION 'only the case agent can do this' USING ERRCODE = '42501';
  END IF;
  RETURN o;
END $$;
REVOKE ALL ON FUNCTION public.survale_own_operation(uuid) FROM PUBLIC;

-- create_operation(name, incident_number): a draft in the caller's team, the caller its case agent and first member.
CREATE OR REPLACE FUNCTION public.create_operation(name text, incident_number text DEFAULT NULL) RETURNS json
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
#variable_conflict use_variable
DECLARE me users := survale_me(); o operations;
BEGIN
  IF coalesce(trim(name), '') = '' THEN RAISE EXCEPTION 'an operation needs a name' USING ERRCODE = '22023'; END IF;
  INSERT INTO operations (agency_id, team_id, case_agent_id, name, incident_number, created_at)
    VALUES (me.agency_id, me.team_id, me.id, name, incident_number, auth.now()) RETURNING * INTO o;
  INSERT INTO operation_members (operation_id, user_id, role, joined_at) VALUES (o.id, me.id, 'case_agent', auth.now());
  RETURN row_to_json(o);
END $$;

-- start_operation(operation_id): draft → active. Nobody is on its channels yet: idle from now.
CREATE OR REPLACE FUNCTION public.start_operation(operation_id uuid) RETURNS json
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE o operations := survale_own_operation(operation_id);
BEGIN
  IF o.status <> 'draft' THEN RAISE EXCEPTION 'operation is %, not draft', o.status; END IF;
  UPDATE operations SET status = 'active', started_at = auth.now(), idle_since = auth.now() WHERE id = o.id RETURNING * INTO o;
  RETURN row_to_json(o);
END $$;

-- The end of an operation, by its case agent or by auto-end: every member leaves it.
CREATE OR REPLACE FUNCTION public.survale_end(op uuid, reason text) RETURNS public.operations
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE o operations;
BEGIN
  UPDATE operations SET status = 'ended', ended_at = auth.now(), end_reason = reason, idle_since = NULL
    WHERE id = op RETURNING * INTO o;
  UPDATE operation_members SET left_at = auth.now() WHERE operation_id = op AND left_at IS NULL;
  UPDATE operation_invites SET status = 'declined', decided_at = auth.now() WHERE operation_id = op AND status = 'pending';
  UPDATE join_requests SET status = 'denied', decided_at = auth.now() WHERE operation_id = op AND status = 'pending';
  RETURN o;
END $$;
REVOKE ALL ON FUNCTION public.survale_end(uuid, text) FROM PUBLIC;

-- end_operation(operation_id): draft or active → ended, by the case agent.
CREATE OR REPLACE FUNCTION public.end_operation(operation_id uuid) RETURNS json
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE o operations := survale_own_operation(operation_id);
BEGIN
  IF o.status = 'ended' THEN RAISE EXCEPTION 'operation has already ended'; END IF;
  RETURN row_to_json(survale_end(o.id, 'case_agent'));
END $$;

-- respond_to_invite(invite_id, accept): the invitee accepts (and becomes a member again if it had left)
-- or declines a pending invite to an operation that has not ended.
CREATE OR REPLACE FUNCTION public.respond_to_invite(invite_id bigint, accept boolean DEFAULT true) RETURNS json
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE i operation_invites; st text;
BEGIN
  SELECT * INTO i FROM operation_invites WHERE id = invite_id FOR UPDATE;
  IF NOT FOUND OR i.invitee_id IS DISTINCT FROM auth.uid() THEN RAISE EXCEPTION 'no such invite for you' USING ERRCODE = '42501'; END IF;
  IF i.status <> 'pending' THEN RAISE EXCEPTION 'invite is already %', i.status; END IF;
  SELECT status INTO st FROM operations WHERE id = i.operation_id FOR UPDATE;
  IF st = 'ended' THEN RAISE EXCEPTION 'operation has ended'; END IF;
  UPDATE operation_invites SET status = CASE WHEN accept THEN 'accepted' ELSE 'declined' END, decided_at = auth.now()
    WHERE id = i.id RETURNING * INTO i;
  IF accept THEN
    INSERT INTO operation_members (operation_id, user_id, role, joined_at) VALUES (i.operation_id, i.invitee_id, 'member', auth.now())
      ON CONFLICT (operation_id, user_id) DO UPDATE SET left_at = NULL, joined_at = auth.now();
  END IF;
  RETURN row_to_json(i);
END $$;

-- decide_join_request(request_id, approve): the case agent lets a requester in, or not.
CREATE OR REPLACE FUNCTION public.decide_join_request(request_id bigint, approve boolean DEFAULT true) RETURNS json
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE r join_requests; o operations;
BEGIN
  SELECT * INTO r FROM join_requests WHERE id = request_id FOR UPDATE;
  IF NOT FOUND THEN RAISE EXCEPTION 'only the case agent can do this' USING ERRCODE = '42501'; END IF;
  o := survale_own_operation(r.operation_id);
  IF r.status <> 'pending' THEN RAISE EXCEPTION 'request is already %', r.status; END IF;
  IF o.status = 'ended' THEN RAISE EXCEPTION 'operation has ended'; END IF;
  UPDATE join_requests SET status = CASE WHEN approve THEN 'approved' ELSE 'denied' END, decided_by = auth.uid(),
    decided_at = auth.now() WHERE id = r.id RETURNING * INTO r;
  IF approve THEN
    INSERT INTO operation_members (operation_id, user_id, role, joined_at) VALUES (r.operation_id, r.requester_id, 'member', auth.now())
      ON CONFLICT (operation_id, user_id) DO UPDATE SET left_at = NULL, joined_at = auth.now();
  END IF;
  RETURN row_to_json(r);
END $$;

-- leave_operation(operation_id): a member leaves (the case agent ends instead).
CREATE OR REPLACE FUNCTION public.leave_operation(operation_id uuid) RETURNS json
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE m operation_members;
BEGIN
  UPDATE operation_members SET left_at = auth.now()
    WHERE operation_members.operation_id = leave_operation.operation_id AND user_id = auth.uid() AND left_at IS NULL AND role = 'member'
    RETURNING * INTO m;
  IF NOT FOUND THEN RAISE EXCEPTION 'not a current member (a case agent ends the operation instead)' USING ERRCODE = '42501'; END IF;
  RETURN row_to_json(m);
END $$;

-- nearby_operations(lat, lon, radius_m): other agencies' active operations whose staging area is within
-- radius_m, as generic markers: the position to 0.01° (about 1 km), and the case agent's callsign and
-- agency to call ("tap to reveal CA"); never the operation's id, name, members or positions.
CREATE OR REPLACE FUNCTION public.nearby_operations(lat double precision, lon double precision, radius_m double precision DEFAULT 5000)
RETURNS json LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
#variable_conflict use_variable
DECLARE me users := survale_me();
BEGIN
  RETURN coalesce((SELECT json_agg(json_build_object('lat', round(s.lat::numeric, 2), 'lon', round(s.lon::numeric, 2),
                                                     'case_agent', ca.callsign, 'agency', a.name) ORDER BY ca.callsign)
    FROM operations o JOIN staging_areas s ON s.operation_id = o.id JOIN users ca ON ca.id = o.case_agent_id
    JOIN agencies a ON a.id = o.agency_id
    WHERE o.status = 'active' AND o.agency_id <> me.agency_id
      AND 6371000 * 2 * asin(sqrt(power(sin(radians(s.lat - lat) / 2), 2)
            + cos(radians(lat)) * cos(radians(s.lat)) * power(sin(radians(s.lon - lon) / 2), 2))) <= radius_m), '[]'::json);
END $$;

GRANT EXECUTE ON FUNCTION public.create_operation(text, text), public.start_operation(uuid), public.end_operation(uuid),
  public.respond_to_invite(bigint, boolean), public.decide_join_request(bigint, boolean), public.leave_operation(uuid),
  public.nearby_operations(double precision, double precision, double precision) TO authenticated;
REVOKE ALL ON FUNCTION public.create_operation(text, text), public.start_operation(uuid), public.end_operation(uuid),
  public.respond_to_invite(bigint, boolean), public.decide_join_request(bigint, boolean), public.leave_operation(uuid),
  public.nearby_operations(double precision, double precision, double precision) FROM PUBLIC, anon;

-- Auto-end (spec §2): the server tells which active operations have someone on their channels
-- (`connected`); the others are idle since now if they were not yet, and one idle for `idle_seconds`
-- ends ('auto_end'). Returns the ids ended. Only the server calls it.
CREATE OR REPLACE FUNCTION public.survale_auto_end(connected uuid[], idle_seconds double precision) RETURNS json
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE ended uuid[] := '{}'; o operations;
BEGIN
  UPDATE operations SET idle_since = NULL WHERE status = 'active' AND id = ANY (connected) AND idle_since IS NOT NULL;
  UPDATE operations SET idle_since = auth.now() WHERE status = 'active' AND NOT (id = ANY (connected)) AND idle_since IS NULL;
  FOR o IN SELECT * FROM operations WHERE status = 'active' AND idle_since <= auth.now() - make_interval(secs => idle_seconds) FOR UPDATE LOOP
    PERFORM survale_end(o.id, 'auto_end');
    ended := ended || o.id;
  END LOOP;
  RETURN to_json(ended);
END $$;
REVOKE ALL ON FUNCTION public.survale_auto_end(uuid[], double precision) FROM PUBLIC, anon, authenticated;
GRANT EXECUTE ON FUNCTION public.survale_auto_end(uuid[], double precision) TO service_role;

-- Retention (spec §2): everything of an operation goes `retention` after it ended — its archive,
-- chat, targets, staging areas, requests, invites, members, media and the operation itself. Returns how
-- many rows went, logged in purge_log.
CREATE OR REPLACE FUNCTION public.purge_ended_operations(retention interval DEFAULT '7 days') RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE n bigint := 0; k bigint; cut timestamptz := auth.now() - retention; ops uuid[];
BEGIN
  SELECT coalesce(array_agg(id), '{}') INTO ops FROM operations WHERE status = 'ended' AND ended_at < cut;
  IF cardinality(ops) > 0 THEN
    DELETE FROM locations_archive WHERE operation_id = ANY (ops); GET DIAGNOSTICS k = ROW_COUNT; n := n + k;
    DELETE FROM op_messages WHERE operation_id = ANY (ops); GET DIAGNOSTICS k = ROW_COUNT; n := n + k;
    DELETE FROM targets WHERE operation_id = ANY (ops); GET DIAGNOSTICS k = ROW_COUNT; n := n + k;
    DELETE FROM staging_areas WHERE operation_id = ANY (ops); GET DIAGNOSTICS k = ROW_COUNT; n := n + k;
    DELETE FROM join_requests WHERE operation_id = ANY (ops); GET DIAGNOSTICS k = ROW_COUNT; n := n + k;
    DELETE FROM operation_invites WHERE operation_id = ANY (ops); GET DIAGNOSTICS k = ROW_COUNT; n := n + k;
    DELETE FROM operation_members WHERE operation_id = ANY (ops); GET DIAGNOSTICS k = ROW_COUNT; n := n + k;
    -- Its media rows (003_survale_media.sql); the server unlinks their bytes after the purge.
    DELETE FROM storage.objects WHERE bucket_id = 'op-media' AND public.operation_of_object(name) = ANY (ops);
    GET DIAGNOSTICS k = ROW_COUNT; n := n + k;
    DELETE FROM operations WHERE id = ANY (ops); GET DIAGNOSTICS k = ROW_COUNT; n := n + k;
  END IF;
  INSERT INTO purge_log (ran_at, deleted, cutoff) VALUES (auth.now(), n, cut);
  RETURN n;
END $$;
REVOKE ALL ON FUNCTION public.purge_ended_operations(interval) FROM PUBLIC, anon, authenticated;
GRANT EXECUTE ON FUNCTION public.purge_ended_operations(interval) TO service_role;
