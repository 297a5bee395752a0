-- Naar's Cars (../shared/seeds/naarscars-security.md) on `convoy serve --database
-- postgres://… --migrations examples/migrations/naarscars`. The seed specifies
-- policies, not tables: these tables carry every column its policies name
-- (§2.1–2.15), plus the few the app plainly needs. Ids are uuid; users are
-- auth.users (the platform's GoTrue table) with a profile each. No name here
-- is one of Green Box's (users, friendships, encrypted_locations, purge_log,
-- invites), which share the `public` schema.
-- Grants: the platform's default privileges give anon, authenticated and
-- service_role ALL on these tables, as Supabase does; RLS (002) decides.

-- §2.1 (and §2.15, §4): one per user; approved by an admin, is_admin set by one.
CREATE TABLE public.profiles (
  id uuid PRIMARY KEY REFERENCES auth.users(id) ON DELETE CASCADE,
  name text NOT NULL,
  email text,
  avatar_url text,
  approved boolean NOT NULL DEFAULT false,
  is_admin boolean NOT NULL DEFAULT false,
  invited_by uuid REFERENCES public.profiles(id),
  created_at timestamptz NOT NULL DEFAULT auth.now()
);

-- §2.2: a ride request; claimed_by is whoever claimed it (claim = set it,
-- unclaim = set it NULL; 003 rate-limits changes to it).
CREATE TABLE public.rides (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES public.profiles(id),
  claimed_by uuid REFERENCES public.profiles(id),
  pickup text NOT NULL,
  destination text,
  departs_at timestamptz,
  seats integer NOT NULL DEFAULT 1,
  notes text,
  status text NOT NULL DEFAULT 'open',
  created_at timestamptz NOT NULL DEFAULT auth.now()
);

-- §2.3: a favor request, claimed as rides are.
CREATE TABLE public.favors (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES public.profiles(id),
  claimed_by uuid REFERENCES public.profiles(id),
  title text NOT NULL,
  description text,
  location text,
  due_at timestamptz,
  status text NOT NULL DEFAULT 'open',
  created_at timestamptz NOT NULL DEFAULT auth.now()
);

-- §2.4–2.5: who goes along on a ride / helps with a favor.
CREATE TABLE public.ride_participants (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  ride_id uuid NOT NULL REFERENCES public.rides(id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES public.profiles(id),
  created_at timestamptz NOT NULL DEFAULT auth.now(),
  UNIQUE (ride_id, user_id)
);
CREATE TABLE public.favor_participants (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  favor_id uuid NOT NULL REFERENCES public.favors(id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES public.profiles(id),
  created_at timestamptz NOT NULL DEFAULT auth.now(),
  UNIQUE (favor_id, user_id)
);

-- §2.6: questions on a ride or a favor, and answers (parent_id: the question).
CREATE TABLE public.request_qa (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  ride_id uuid REFERENCES public.rides(id) ON DELETE CASCADE,
  favor_id uuid REFERENCES public.favors(id) ON DELETE CASCADE,
  parent_id uuid REFERENCES public.request_qa(id) ON DELETE CASCADE,
  created_by uuid NOT NULL REFERENCES public.profiles(id),
  body text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT auth.now(),
  CHECK (num_nonnulls(ride_id, favor_id) = 1)
);

-- §2.7–2.9: direct and group messages. conversation_participants has an id of
-- its own (Realtime needs a one-column key), which matters to §2.8's policy.
CREATE TABLE public.conversations (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  created_by uuid NOT NULL REFERENCES public.profiles(id),
  ride_id uuid REFERENCES public.rides(id) ON DELETE SET NULL,
  favor_id uuid REFERENCES public.favors(id) ON DELETE SET NULL,
  title text,
  created_at timestamptz NOT NULL DEFAULT auth.now()
);
CREATE TABLE public.conversation_participants (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  conversation_id uuid NOT NULL REFERENCES public.conversations(id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES public.profiles(id),
  last_read_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT auth.now(),
  UNIQUE (conversation_id, user_id)
);
CREATE TABLE public.messages (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  conversation_id uuid NOT NULL REFERENCES public.conversations(id) ON DELETE CASCADE,
  from_id uuid NOT NULL REFERENCES public.profiles(id),
  text text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT auth.now()
);
CREATE INDEX messages_conversation ON public.messages (conversation_id, created_at);

-- §2.10 (and §4.2's broadcasts: pinned).
CREATE TABLE public.notifications (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES public.profiles(id) ON DELETE CASCADE,
  type text NOT NULL DEFAULT 'general',
  title text NOT NULL,
  body text,
  read boolean NOT NULL DEFAULT false,
  pinned boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT auth.now()
);
CREATE INDEX notifications_user ON public.notifications (user_id, created_at);

-- §2.11, §6: NC + 8 of the 31 letters of §6.1's generator (the seed says 32).
-- used_by is an auth user (a code is used at signup, before any profile);
-- one code per user.
CREATE TABLE public.invite_codes (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  code text NOT NULL UNIQUE CHECK (code ~ '^NC[ABCDEFGHJKMNPQRSTUVWXYZ23456789]{8}$'),
  created_by uuid NOT NULL DEFAULT auth.uid() REFERENCES public.profiles(id),
  used_by uuid UNIQUE REFERENCES auth.users(id) ON DELETE SET NULL,
  used_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT auth.now()
);
CREATE INDEX invite_codes_created_by ON public.invite_codes (created_by);

-- §2.12, §7: one token per (user, device); §7.2's cleanup reads last_used_at.
CREATE TABLE public.push_tokens (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES auth.users(id) ON DELETE CASCADE,
  device_id text NOT NULL,
  token text NOT NULL,
  last_used_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT auth.now(),
  UNIQUE (user_id, device_id)
);
CREATE INDEX push_tokens_token ON public.push_tokens (token);

-- §2.13: a review of whoever drove / helped, after a ride or favor.
CREATE TABLE public.reviews (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  reviewer_id uuid NOT NULL REFERENCES public.profiles(id),
  reviewee_id uuid NOT NULL REFERENCES public.profiles(id),
  ride_id uuid REFERENCES public.rides(id) ON DELETE SET NULL,
  favor_id uuid REFERENCES public.favors(id) ON DELETE SET NULL,
  rating integer NOT NULL CHECK (rating BETWEEN 1 AND 5),
  comment text,
  created_at timestamptz NOT NULL DEFAULT auth.now()
);

-- §2.14.
CREATE TABLE public.town_hall_posts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES public.profiles(id),
  title text,
  content text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT auth.now()
);
