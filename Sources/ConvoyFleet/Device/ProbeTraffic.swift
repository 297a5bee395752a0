/// What the probes post to real devices of a fleet (a replayed ciphertext,
/// a friend's update for a Realtime probe to watch) carries sequence numbers
/// from `seqBase` up, far above any device's own, so a receiving device
/// counts it apart (`probe_rows_received`) and the run's accounting of
/// real updates is untouched.
public enum ProbeTraffic {
    public static let seqBase: UInt64 = 1 << 52  // exact in a JSON double, as is every number above it the probes use
}
