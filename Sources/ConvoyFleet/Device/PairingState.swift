/// Pairing during the run (`VirtualDevice+Pairing`), whatever the app's shape: the phone's plan, whom it
/// asked (when, what), the request ids it has seen, the pending request from each friend, the requests
/// to accept when they come or to try again, and the friends whose first update it awaits.
struct PairingState: Sendable {
    let plan: DevicePairing?
    var asked: [String: (at: Double, request: DevicePairing.Request)] = [:]
    var answered: Set<String> = []
    var pendingFrom: [String: String] = [:]
    var acceptWhenAsked: Set<String> = []
    var retryAccept: Set<String> = []
    var awaitingFirstUpdate: [Int32: (at: Double, later: Bool)] = [:]

    init(plan: DevicePairing?) { self.plan = plan }
}
