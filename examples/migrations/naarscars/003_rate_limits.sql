-- naarscars-security.md §5.3's two "Database trigger" limits: claim/unclaim,
-- 3 a minute per user (a change of rides.claimed_by or favors.claimed_by, the
-- claimer column of §2.2–2.3's policies), and invite generation, 5 a day per
-- user (an INSERT into invite_codes). Counted per acting user (auth.uid(), not
-- a column the client writes) in a bookkeeping table outside `public` (so
-- REST does not serve it) that only these SECURITY DEFINER functions touch.
-- Time is auth.now() (the server's clock). Over the limit: SQLSTATE PT429,
-- which PostgREST answers 429, with §6.3's message. A refused attempt is not
-- counted (its transaction rolls back). Requests without a user (the service
-- role, psql) are not limited.

CREATE SCHEMA naarscars_private;
REVOKE ALL ON SCHEMA naarscars_private FROM PUBLIC;

CREATE TABLE naarscars_private.rate_events (
  user_id uuid NOT NULL,
  action text NOT NULL,
  at timestamptz NOT NULL
);
CREATE INDEX rate_events_lookup ON naarscars_private.rate_events (user_id, action, at);

-- Record one `action` by the current user, or raise PT429 when it already has
-- `max_count` within `window_length`. The advisory lock serialises one
-- user's attempts at one action, so concurrent requests cannot all pass.
CREATE FUNCTION naarscars_private.rate_limit(action text, max_count int, window_length interval) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE who uuid := auth.uid(); t timestamptz := auth.now();
BEGIN
  IF who IS NULL THEN RETURN; END IF;
  PERFORM pg_advisory_xact_lock(hashtext('naarscars:' || action), hashtext(who::text));
  IF (SELECT count(*) FROM naarscars_private.rate_events e
       WHERE e.user_id = who AND e.action = rate_limit.action
         AND e.at > t - window_length AND e.at <= t) >= max_count THEN
    RAISE EXCEPTION USING ERRCODE = 'PT429', MESSAGE = 'Too many attempts. Please try again later.';
  END IF;
  INSERT INTO naarscars_private.rate_events (user_id, action, at) VALUES (who, rate_limit.action, t);
  DELETE FROM naarscars_private.rate_events e
   WHERE e.user_id = who AND e.action = rate_limit.action AND e.at < t - interval '2 days';
END $$;
REVOKE ALL ON FUNCTION naarscars_private.rate_limit(text, int, interval) FROM PUBLIC;

-- Claim/unclaim: 3 per minute. Fires only when claimed_by actually changes.
CREATE FUNCTION naarscars_private.limit_claims() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM naarscars_private.rate_limit('claim', 3, interval '1 minute');
  RETURN NEW;
END $$;
CREATE TRIGGER limit_claims BEFORE UPDATE OF claimed_by ON public.rides
  FOR EACH ROW WHEN (OLD.claimed_by IS DISTINCT FROM NEW.claimed_by)
  EXECUTE FUNCTION naarscars_private.limit_claims();
CREATE TRIGGER limit_claims BEFORE UPDATE OF claimed_by ON public.favors
  FOR EACH ROW WHEN (OLD.claimed_by IS DISTINCT FROM NEW.claimed_by)
  EXECUTE FUNCTION naarscars_private.limit_claims();

-- Invite generation: 5 per 24 hours.
CREATE FUNCTION naarscars_private.limit_invites() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM naarscars_private.rate_limit('invite', 5, interval '24 hours');
  RETURN NEW;
END $$;
CREATE TRIGGER limit_invites BEFORE INSERT ON public.invite_codes
  FOR EACH ROW EXECUTE FUNCTION naarscars_private.limit_invites();
