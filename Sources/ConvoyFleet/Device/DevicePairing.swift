/// What a phone does about friends during the run, for an app that pairs on
/// the phones (`FriendApp.pairsDuringRun`, Green Box `pairing: prd`): whom it
/// asks, when, and at what preference; and how it answers each request it
/// expects — after a moment's thought, or "decide later".
public struct DevicePairing: Sendable {
    /// A friend this phone asks, `after` seconds after it arrives.
    public struct Request: Sendable {
        public var index: Int
        public var userID: String
        /// The friend's address, what the inviter finds it by (QuickPic's username is made from it).
        public var email: String
        public var preference: String
        public var after: Double
        /// The friend will leave it at "decide later": its acceptance, if any, is measured apart (`pairing_accept_later`).
        public var decidedLater: Bool

        public init(index: Int, userID: String, email: String = "", preference: String, after: Double, decidedLater: Bool = false) {
            (self.index, self.userID, self.email, self.preference, self.after, self.decidedLater) = (index, userID, email, preference, after, decidedLater)
        }

        var invitee: Invitee { Invitee(userID: userID, email: email) }
    }

    /// How this phone answers a request from a friend of the graph.
    public struct Answer: Sendable {
        public var index: Int
        public var preference: String
        /// Seconds between seeing the request and answering it; nil: "decide later"
        /// (it stays pending unless the run has it accepted later).
        public var delay: Double?
        /// The answer, after `delay`, is no (`social.decline`): the app's decline (`declineFriendship`).
        public var declines: Bool

        public init(index: Int, preference: String, delay: Double?, declines: Bool = false) {
            (self.index, self.preference, self.delay, self.declines) = (index, preference, delay, declines)
        }
    }

    public var requests: [Request]
    /// By the asking friend's user id.
    public var answers: [String: Answer]

    public init(requests: [Request] = [], answers: [String: Answer] = [:]) { (self.requests, self.answers) = (requests, answers) }
}
