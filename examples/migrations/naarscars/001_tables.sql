-- Naar's Cars (../shared/seeds/naarscars-security.md) on `convoy serve --database
-- postgres://… --migrations examples/migrations/naarscars`. The seed specifies
-- policies, not tables: these two tables carry the columns its policies name.
CREATE TABLE public.profiles (
  id uuid PRIMARY KEY REFERENCES auth.users(id) ON DELETE CASCADE,
  name text NOT NULL,
  approved boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE public.rides (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES public.profiles(id),
  claimed_by uuid REFERENCES public.profiles(id),
  pickup text NOT NULL,
  seats integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now()
);
