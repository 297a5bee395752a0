import GRDB

extension ServerApp {
    /// By default an app has no policy on `realtime.messages`: no user may
    /// join, send or track on a private channel (as a Supabase project with
    /// RLS on and no policy); public channels are not affected.
    func realtimeAllows(_ action: ChannelAction, _ ext: RealtimeExtension, topic: String, as who: Principal,
                        in db: Database) throws -> Bool {
        false
    }
}
