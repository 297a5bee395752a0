-- naarscars-security.md §2.1–2.2, verbatim.

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
