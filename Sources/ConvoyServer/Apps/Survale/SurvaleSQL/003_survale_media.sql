-- Survale's chat media (spec §6: photos and short videos, uploaded with
-- signed URLs): the private bucket `op-media`, objects named
-- `<operation id>/<file>`, and the policies on `storage.objects` that keep them
-- to the operation: its members read them (also after the end, for replay), a
-- current member of an active operation uploads; nobody but the purge deletes.
-- Applied after the platform's Storage SQL (001_object_storage.sql). Mirrors
-- SurvaleServer+Media.swift (the SQLite store). Idempotent.
INSERT INTO storage.buckets (id, name, public, file_size_limit, allowed_mime_types)
  VALUES ('op-media', 'op-media', false, 52428800, ARRAY['image/*', 'video/*'])
  ON CONFLICT (id) DO NOTHING;

-- The operation an object belongs to: its first folder, when that is an operation id.
CREATE OR REPLACE FUNCTION public.operation_of_object(name text) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN (storage.foldername(name))[1] ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
              THEN ((storage.foldername(name))[1])::uuid END
$$;
GRANT EXECUTE ON FUNCTION public.operation_of_object(text) TO anon, authenticated, service_role;

DROP POLICY IF EXISTS survale_media_select ON storage.objects;
CREATE POLICY survale_media_select ON storage.objects FOR SELECT TO authenticated
  USING (bucket_id = 'op-media' AND public.is_operation_member(public.operation_of_object(name)));
DROP POLICY IF EXISTS survale_media_insert ON storage.objects;
CREATE POLICY survale_media_insert ON storage.objects FOR INSERT TO authenticated
  WITH CHECK (bucket_id = 'op-media' AND public.is_current_member(public.operation_of_object(name), ARRAY['active']));
