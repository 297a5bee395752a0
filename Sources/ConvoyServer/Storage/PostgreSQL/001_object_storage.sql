-- Supabase Storage's tables, as storage-api's tenant migrations leave them
-- (supabase/storage migrations/tenant 0002, 0003, 0007, 0008, 0013–0018, 0025,
-- 0046): schema `storage`, `storage.buckets` and `storage.objects` with
-- row-level security enabled and no policy, all privileges on both granted to
-- anon, authenticated and service_role (so RLS alone decides), and the helpers
-- policies are written with: storage.foldername(name), storage.filename(name),
-- storage.extension(name). `convoy serve` reads and writes these rows as the
-- requesting role (auth.request), as storage-api does, so an app's
-- `CREATE POLICY … ON storage.objects` decides who may upload, read, list and
-- delete; the object bytes live on the server's disk, named by `version`.
-- Applied after 000_platform.sql; every statement is idempotent.

CREATE SCHEMA IF NOT EXISTS storage;

CREATE TABLE IF NOT EXISTS storage.buckets (
  id text PRIMARY KEY,
  name text NOT NULL,
  owner uuid,
  owner_id text,
  created_at timestamptz DEFAULT now(),
  updated_at timestamptz DEFAULT now(),
  public boolean DEFAULT false,
  file_size_limit bigint,
  allowed_mime_types text[],
  type text NOT NULL DEFAULT 'STANDARD'
);
CREATE UNIQUE INDEX IF NOT EXISTS bname ON storage.buckets USING btree (name);

CREATE TABLE IF NOT EXISTS storage.objects (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  bucket_id text REFERENCES storage.buckets (id),
  name text,
  owner uuid,
  owner_id text,
  created_at timestamptz DEFAULT now(),
  updated_at timestamptz DEFAULT now(),
  last_accessed_at timestamptz DEFAULT now(),
  metadata jsonb,
  path_tokens text[] GENERATED ALWAYS AS (string_to_array(name, '/')) STORED,
  version text,
  user_metadata jsonb
);
CREATE UNIQUE INDEX IF NOT EXISTS bucketid_objname ON storage.objects USING btree (bucket_id, name);
CREATE INDEX IF NOT EXISTS name_prefix_search ON storage.objects (name text_pattern_ops);

ALTER TABLE storage.buckets ENABLE ROW LEVEL SECURITY;
ALTER TABLE storage.objects ENABLE ROW LEVEL SECURITY;

GRANT USAGE ON SCHEMA storage TO anon, authenticated, service_role;
GRANT ALL ON storage.buckets, storage.objects TO anon, authenticated, service_role;

CREATE OR REPLACE FUNCTION storage.foldername(name text) RETURNS text[] LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE _parts text[];
BEGIN
  SELECT string_to_array(name, '/') INTO _parts;
  RETURN _parts[1:array_length(_parts, 1) - 1];
END $$;

CREATE OR REPLACE FUNCTION storage.filename(name text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE _parts text[];
BEGIN
  SELECT string_to_array(name, '/') INTO _parts;
  RETURN _parts[array_length(_parts, 1)];
END $$;

CREATE OR REPLACE FUNCTION storage.extension(name text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE _parts text[]; _filename text;
BEGIN
  SELECT string_to_array(name, '/') INTO _parts;
  SELECT _parts[array_length(_parts, 1)] INTO _filename;
  RETURN reverse(split_part(reverse(_filename), '.', 1));
END $$;

GRANT EXECUTE ON FUNCTION storage.foldername(text), storage.filename(text), storage.extension(text)
  TO anon, authenticated, service_role;

-- storage-api's update_updated_at_column (0011): an object's updated_at moves with each change.
CREATE OR REPLACE FUNCTION storage.update_updated_at_column() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.updated_at = auth.now();
  RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS update_objects_updated_at ON storage.objects;
CREATE TRIGGER update_objects_updated_at BEFORE UPDATE ON storage.objects
  FOR EACH ROW EXECUTE FUNCTION storage.update_updated_at_column();

-- storage-api's canUpload: the write tried as the requester (RLS decides) and
-- rolled back, before the bytes are read (0015's can_insert_object, with its
-- upsert twin). A refusal raises 42501; success raises PT200, which the server
-- reads as "allowed" (the raise undoes the row).
CREATE OR REPLACE FUNCTION storage.convoy_can_write_object(bucketid text, objectname text, objectowner text,
                                                           objectmetadata jsonb, upsert boolean) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF upsert THEN
    INSERT INTO storage.objects (bucket_id, name, owner, owner_id, metadata, version)
    VALUES (bucketid, objectname, objectowner::uuid, objectowner, objectmetadata, 'check')
    ON CONFLICT (bucket_id, name) DO UPDATE SET owner = EXCLUDED.owner, owner_id = EXCLUDED.owner_id,
      metadata = EXCLUDED.metadata, version = EXCLUDED.version;
  ELSE
    INSERT INTO storage.objects (bucket_id, name, owner, owner_id, metadata, version)
    VALUES (bucketid, objectname, objectowner::uuid, objectowner, objectmetadata, 'check');
  END IF;
  RAISE sqlstate 'PT200' USING message = 'ROLLBACK', detail = 'rollback successful insert';
END $$;
GRANT EXECUTE ON FUNCTION storage.convoy_can_write_object(text, text, text, jsonb, boolean) TO anon, authenticated, service_role;
