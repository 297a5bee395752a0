-- naarscars-security.md §2.1–2.15, every policy verbatim (the broken ones
-- included: the point is to probe the seed as written). Only these comments
-- between the blocks are ours. The tables are 001_tables.sql's.

-- §2.1 profiles ----------------------------------------------------------------
-- profiles_select_approved reads profiles inside profiles' own policy: every
-- statement that applies it (and every other table's policy that reads
-- profiles) fails 42P17 for anon and authenticated.

-- Enable RLS
ALTER TABLE public.profiles ENABLE ROW LEVEL SECURITY;

-- Users can view own profile or other approved users
CREATE POLICY "profiles_select_approved" ON public.profiles
  FOR SELECT USING (
    auth.uid() = id 
    OR EXISTS (SELECT 1 FROM public.profiles WHERE id = auth.uid() AND approved = true)
  );

-- Users can only update their own profile
CREATE POLICY "profiles_update_own" ON public.profiles
  FOR UPDATE USING (auth.uid() = id);

-- Users can only insert their own profile (during signup)
CREATE POLICY "profiles_insert_own" ON public.profiles
  FOR INSERT WITH CHECK (auth.uid() = id);

-- §2.2 rides -------------------------------------------------------------------

ALTER TABLE public.rides ENABLE ROW LEVEL SECURITY;

-- Approved users can view all rides
CREATE POLICY "rides_select_approved" ON public.rides
  FOR SELECT USING (
    EXISTS (SELECT 1 FROM public.profiles WHERE id = auth.uid() AND approved = true)
  );

-- Users can only create their own rides
CREATE POLICY "rides_insert_own" ON public.rides
  FOR INSERT WITH CHECK (auth.uid() = user_id);

-- Users can update their own rides or rides they've claimed
CREATE POLICY "rides_update_own_or_claimer" ON public.rides
  FOR UPDATE USING (auth.uid() = user_id OR auth.uid() = claimed_by);

-- Users can only delete their own rides
CREATE POLICY "rides_delete_own" ON public.rides
  FOR DELETE USING (auth.uid() = user_id);

-- §2.3 favors ------------------------------------------------------------------

ALTER TABLE public.favors ENABLE ROW LEVEL SECURITY;

CREATE POLICY "favors_select_approved" ON public.favors
  FOR SELECT USING (
    EXISTS (SELECT 1 FROM public.profiles WHERE id = auth.uid() AND approved = true)
  );

CREATE POLICY "favors_insert_own" ON public.favors
  FOR INSERT WITH CHECK (auth.uid() = user_id);

CREATE POLICY "favors_update_own_or_claimer" ON public.favors
  FOR UPDATE USING (auth.uid() = user_id OR auth.uid() = claimed_by);

CREATE POLICY "favors_delete_own" ON public.favors
  FOR DELETE USING (auth.uid() = user_id);

-- §2.4 ride_participants -------------------------------------------------------

ALTER TABLE public.ride_participants ENABLE ROW LEVEL SECURITY;

-- Approved users can view participants
CREATE POLICY "ride_participants_select_approved" ON public.ride_participants
  FOR SELECT USING (
    EXISTS (SELECT 1 FROM public.profiles WHERE id = auth.uid() AND approved = true)
  );

-- Only ride owner can add participants
CREATE POLICY "ride_participants_insert_owner" ON public.ride_participants
  FOR INSERT WITH CHECK (
    EXISTS (
      SELECT 1 FROM public.rides 
      WHERE id = ride_participants.ride_id 
      AND user_id = auth.uid()
    )
  );

-- §2.5 favor_participants ------------------------------------------------------

ALTER TABLE public.favor_participants ENABLE ROW LEVEL SECURITY;

-- Approved users can view participants
CREATE POLICY "favor_participants_select_approved" ON public.favor_participants
  FOR SELECT USING (
    EXISTS (SELECT 1 FROM public.profiles WHERE id = auth.uid() AND approved = true)
  );

-- Only favor owner can add participants
CREATE POLICY "favor_participants_insert_owner" ON public.favor_participants
  FOR INSERT WITH CHECK (
    EXISTS (
      SELECT 1 FROM public.favors 
      WHERE id = favor_participants.favor_id 
      AND user_id = auth.uid()
    )
  );

-- §2.6 request_qa --------------------------------------------------------------

ALTER TABLE public.request_qa ENABLE ROW LEVEL SECURITY;

-- Approved users can view Q&A
CREATE POLICY "request_qa_select_approved" ON public.request_qa
  FOR SELECT USING (
    EXISTS (SELECT 1 FROM public.profiles WHERE id = auth.uid() AND approved = true)
  );

-- Approved users can ask questions
CREATE POLICY "request_qa_insert_approved" ON public.request_qa
  FOR INSERT WITH CHECK (
    EXISTS (SELECT 1 FROM public.profiles WHERE id = auth.uid() AND approved = true)
  );

-- Users can only delete their own questions/answers
CREATE POLICY "request_qa_delete_own" ON public.request_qa
  FOR DELETE USING (auth.uid() = created_by);

-- §2.7 messages ----------------------------------------------------------------

ALTER TABLE public.messages ENABLE ROW LEVEL SECURITY;

-- Users can only see messages in conversations they're part of
CREATE POLICY "messages_select_participant" ON public.messages
  FOR SELECT USING (
    EXISTS (
      SELECT 1 FROM public.conversation_participants 
      WHERE conversation_id = messages.conversation_id 
      AND user_id = auth.uid()
    )
  );

-- Users can only send messages as themselves in conversations they're in
CREATE POLICY "messages_insert_participant" ON public.messages
  FOR INSERT WITH CHECK (
    auth.uid() = from_id
    AND EXISTS (
      SELECT 1 FROM public.conversation_participants 
      WHERE conversation_id = messages.conversation_id 
      AND user_id = auth.uid()
    )
  );

-- §2.8 conversations -----------------------------------------------------------
-- Inside the subquery `id` is conversation_participants.id (the inner table's
-- column wins), not conversations.id: the check compares a participant row
-- with itself, so no conversation is visible to anyone.

ALTER TABLE public.conversations ENABLE ROW LEVEL SECURITY;

-- Users can only see conversations they're part of
CREATE POLICY "conversations_select_participant" ON public.conversations
  FOR SELECT USING (
    EXISTS (
      SELECT 1 FROM public.conversation_participants 
      WHERE conversation_id = id 
      AND user_id = auth.uid()
    )
  );

-- §2.9 conversation_participants -----------------------------------------------
-- is_conversation_participant is the seed's own helper (the only function its
-- policies call besides the platform's auth.uid()); kept as written (no
-- search_path, EXECUTE left to PUBLIC, so it is also an RPC).

ALTER TABLE public.conversation_participants ENABLE ROW LEVEL SECURITY;

-- Helper function to check participation without RLS recursion
CREATE OR REPLACE FUNCTION public.is_conversation_participant(
  p_conversation_id UUID,
  p_user_id UUID
) RETURNS BOOLEAN
LANGUAGE sql
SECURITY DEFINER
STABLE
AS $$
  SELECT EXISTS (
    SELECT 1 FROM public.conversation_participants
    WHERE conversation_id = p_conversation_id
    AND user_id = p_user_id
  );
$$;

-- Users can see participants in their conversations
-- Uses SECURITY DEFINER function to avoid infinite recursion
CREATE POLICY "participants_select_own_convos" ON public.conversation_participants
  FOR SELECT USING (
    -- User can see their own participation
    user_id = auth.uid()
    OR
    -- User can see other participants in conversations where they are a participant
    public.is_conversation_participant(conversation_participants.conversation_id, auth.uid())
  );

-- Users can add themselves or be added by conversation creator
CREATE POLICY "participants_insert_creator_or_self" ON public.conversation_participants
  FOR INSERT WITH CHECK (
    user_id = auth.uid()
    OR
    EXISTS (
      SELECT 1 FROM public.conversations c
      WHERE c.id = conversation_participants.conversation_id
      AND c.created_by = auth.uid()
    )
  );

-- Users can update their own participation
CREATE POLICY "participants_update_own" ON public.conversation_participants
  FOR UPDATE USING (user_id = auth.uid());

-- Users can remove their own participation
CREATE POLICY "participants_delete_own" ON public.conversation_participants
  FOR DELETE USING (user_id = auth.uid());

-- §2.10 notifications ----------------------------------------------------------

ALTER TABLE public.notifications ENABLE ROW LEVEL SECURITY;

-- Users can only see their own notifications
CREATE POLICY "notifications_select_own" ON public.notifications
  FOR SELECT USING (auth.uid() = user_id);

-- Users can only update (mark read) their own notifications
CREATE POLICY "notifications_update_own" ON public.notifications
  FOR UPDATE USING (auth.uid() = user_id);

-- System/admins can insert notifications for any user
CREATE POLICY "notifications_insert" ON public.notifications
  FOR INSERT WITH CHECK (true);

-- §2.11 invite_codes -----------------------------------------------------------

ALTER TABLE public.invite_codes ENABLE ROW LEVEL SECURITY;

-- Users can see their own created codes
CREATE POLICY "invite_codes_select_own" ON public.invite_codes
  FOR SELECT USING (auth.uid() = created_by);

-- Approved users can create invite codes
CREATE POLICY "invite_codes_insert_approved" ON public.invite_codes
  FOR INSERT WITH CHECK (
    EXISTS (SELECT 1 FROM public.profiles WHERE id = auth.uid() AND approved = true)
  );

-- Allow code lookup during signup (before user is authenticated)
CREATE POLICY "invite_codes_select_for_validation" ON public.invite_codes
  FOR SELECT USING (used_by IS NULL);

-- §2.12 push_tokens ------------------------------------------------------------

ALTER TABLE public.push_tokens ENABLE ROW LEVEL SECURITY;

-- Users can only manage their own push tokens
CREATE POLICY "push_tokens_own" ON public.push_tokens
  FOR ALL USING (auth.uid() = user_id);

-- §2.13 reviews ----------------------------------------------------------------

ALTER TABLE public.reviews ENABLE ROW LEVEL SECURITY;

-- Approved users can view all reviews
CREATE POLICY "reviews_select_approved" ON public.reviews
  FOR SELECT USING (
    EXISTS (SELECT 1 FROM public.profiles WHERE id = auth.uid() AND approved = true)
  );

-- Users can only create reviews as themselves
CREATE POLICY "reviews_insert_own" ON public.reviews
  FOR INSERT WITH CHECK (auth.uid() = reviewer_id);

-- §2.14 town_hall_posts --------------------------------------------------------

ALTER TABLE public.town_hall_posts ENABLE ROW LEVEL SECURITY;

-- Approved users can view all posts
CREATE POLICY "town_hall_posts_select_approved" ON public.town_hall_posts
  FOR SELECT USING (
    EXISTS (SELECT 1 FROM public.profiles WHERE id = auth.uid() AND approved = true)
  );

-- Users can only create their own posts
CREATE POLICY "town_hall_posts_insert_own" ON public.town_hall_posts
  FOR INSERT WITH CHECK (auth.uid() = user_id);

-- Users can delete their own posts, admins can delete any
CREATE POLICY "town_hall_posts_delete_own_or_admin" ON public.town_hall_posts
  FOR DELETE USING (
    auth.uid() = user_id 
    OR EXISTS (SELECT 1 FROM public.profiles WHERE id = auth.uid() AND is_admin = true)
  );

-- §2.15 Admin Operations -------------------------------------------------------
-- A second permissive UPDATE policy on profiles, OR'd with profiles_update_own;
-- it reads profiles too, so every UPDATE of profiles now fails 42P17.

-- Example: Only admins can update other users' approved status
CREATE POLICY "admin_approve_users" ON public.profiles
  FOR UPDATE USING (
    -- Either updating own profile OR is admin updating others
    auth.uid() = id 
    OR EXISTS (SELECT 1 FROM public.profiles WHERE id = auth.uid() AND is_admin = true)
  );

-- Only admins can toggle admin status
-- IMPORTANT: This should be an Edge Function for additional safety
