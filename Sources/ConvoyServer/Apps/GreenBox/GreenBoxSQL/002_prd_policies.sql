-- `convoy serve` without --strict-policies after a run with it: the PRD's rule
-- again (users may post locations to anyone, as themselves).
DROP POLICY IF EXISTS encrypted_locations_insert ON public.encrypted_locations;
CREATE POLICY encrypted_locations_insert ON public.encrypted_locations FOR INSERT TO authenticated
  WITH CHECK (sender_id = auth.uid());
