-- naarscars-security.md §6 as RPCs the app calls at signup:
--   POST /rest/v1/rpc/validate_invite_code {"code": "NC…"}  (anon or signed in)
--   POST /rest/v1/rpc/redeem_invite_code   {"code": "NC…"}  (the new user, signed in)
-- §6.2–6.3: an unknown code and a used one get the same error, "Invalid or
-- expired invite code" (P0001, HTTP 400). The seed has no expiry, so none
-- here. Codes are matched case-insensitively (upper, trimmed). No §2.11
-- policy lets a user mark a code used, so redeeming is SECURITY DEFINER.
-- §5.3's validation limit (5 an hour, per IP) is an Edge Function's and is
-- not here. search_path ends with pg_temp so temporary tables cannot shadow
-- invite_codes.

CREATE FUNCTION public.validate_invite_code(code text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM public.invite_codes i
                  WHERE i.code = upper(btrim(validate_invite_code.code)) AND i.used_by IS NULL) THEN
    RAISE EXCEPTION 'Invalid or expired invite code';
  END IF;
  RETURN true;
END $$;
REVOKE ALL ON FUNCTION public.validate_invite_code(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.validate_invite_code(text) TO anon, authenticated, service_role;

-- Marks the code used by the caller (one code per user: invite_codes.used_by
-- is unique). Row-locked, so two signups cannot both use one code.
CREATE FUNCTION public.redeem_invite_code(code text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE me uuid := auth.uid(); found_id uuid;
BEGIN
  IF me IS NULL THEN
    RAISE EXCEPTION 'permission denied for function redeem_invite_code' USING ERRCODE = '42501';
  END IF;
  IF EXISTS (SELECT 1 FROM public.invite_codes i WHERE i.used_by = me) THEN
    RAISE EXCEPTION 'You have already used an invite code';
  END IF;
  SELECT i.id INTO found_id FROM public.invite_codes i
   WHERE i.code = upper(btrim(redeem_invite_code.code)) AND i.used_by IS NULL
   FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Invalid or expired invite code';
  END IF;
  UPDATE public.invite_codes SET used_by = me, used_at = auth.now() WHERE id = found_id;
  RETURN true;
END $$;
REVOKE ALL ON FUNCTION public.redeem_invite_code(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.redeem_invite_code(text) TO authenticated, service_role;
