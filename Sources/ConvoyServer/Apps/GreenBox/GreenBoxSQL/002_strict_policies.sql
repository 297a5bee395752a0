-- `convoy serve --strict-policies`: users may post locations to active friends only
-- (the PRD lets them post to anyone).
DROP POLICY IF EXISTS encrypted_locations_insert ON public.encrypted_locations;
CREATE POLICY encrypted_locations_insert ON public.encrypted_locations FOR INSERT TO authenticated
  WITH CHECK (sender_id = auth.uid() AND EXISTS (
    SELECT 1 FROM public.friendships f WHERE f.status = 'active'
      AND ((f.user_id_1 = sender_id AND f.user_id_2 = recipient_id) OR (f.user_id_2 = sender_id AND f.user_id_1 = recipient_id))));
