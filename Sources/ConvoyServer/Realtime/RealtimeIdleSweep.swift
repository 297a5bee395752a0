import ConvoyTime
import ServiceLifecycle

/// Closes Realtime sockets whose client sent nothing for `timeout` seconds,
/// as Supabase's Realtime does: Phoenix's websocket (Cowboy's `idle_timeout`,
/// 60 s) closes a socket it heard nothing from, with close 1000, and the
/// server never pings. Clients keep theirs open with Phoenix heartbeats
/// (supabase-js every 25 s). One sweep over every connection each sixth of
/// the timeout, so a socket goes between `timeout` and 7/6 of it after its
/// last message; no timer per connection.
struct RealtimeIdleSweep: Service {
    let hub: RealtimeHub
    let clock: any ConvoyClock
    let timeout: Double

    /// One sweep now; how many sockets it closed.
    @discardableResult
    func once() -> Int { hub.closeIdle(heardBefore: clock.now() - timeout) }

    func run() async {
        await cancelWhenGracefulShutdown {
            let every = max(timeout / 6, 0.01)
            while !Task.isCancelled {
                do { try await clock.sleep(for: every) } catch { return }
                once()
            }
        }
    }
}
