import NIOCore
import NIOHTTP1

extension RequestLimitsHandler {
    /// Which clock runs on a connection, and what to do when it runs out or
    /// the request is bad. Times come in as arguments, so it is tested without a network.
    ///
    /// Three clocks, one at a time: idle (nothing under way: no byte of a request
    /// since the connection opened or the last response ended), head (from a
    /// request's first byte until its head is parsed) and body (from the head until
    /// the body's end). While the server works on a request nothing runs: that time is ours.
    struct StateMachine {
        enum Inbound: Equatable {
            /// Between requests, waiting since then.
            case waiting(since: NIODeadline)
            case head(since: NIODeadline)
            case body(since: NIODeadline)
        }

        enum Deadline: Equatable {
            case idle(NIODeadline), head(NIODeadline), body(NIODeadline)

            var time: NIODeadline {
                switch self {
                case .idle(let t), .head(let t), .body(let t): t
                }
            }
        }

        /// What the handler does after an event.
        enum Action: Equatable {
            case none
            /// Close without a word (idle, or a response is already under way).
            case close
            /// Write this status with `Connection: close`, then close.
            case answer(HTTPResponseStatus)
        }

        let limits: ConnectionLimits
        private(set) var inbound: Inbound
        /// Requests whose head was read and whose response has not ended.
        private(set) var owed = 0
        /// A response head is written and its end is not.
        private(set) var responding = false
        /// The current response is the last: close once it has ended.
        private(set) var closeAfterResponse = false
        /// A request said `Connection: close`: the application stops reading after answering it.
        private(set) var lastRequestCloses = false
        /// Answered or closed: nothing more is written.
        private(set) var closed = false
        /// A request that could not be parsed came behind requests still owed an answer: what it gets once
        /// they have theirs (RFC 9112 §9.3.2: pipelined requests are answered in order). Nothing more is read.
        private(set) var refusal: HTTPResponseStatus?

        init(limits: ConnectionLimits, now: NIODeadline) {
            self.limits = limits
            self.inbound = .waiting(since: now)
        }

        /// When the running clock runs out, if one runs.
        var deadline: Deadline? {
            guard !closed else { return nil }
            switch inbound {
            case .waiting(let since):
                return owed == 0 ? .idle(since + Self.amount(limits.idleTimeout)) : nil
            case .head(let since):
                return .head(since + Self.amount(limits.headerTimeout))
            case .body(let since):
                return .body(since + Self.amount(limits.bodyTimeout))
            }
        }

        /// Bytes came in: between requests, the next one has begun.
        mutating func bytesArrived(now: NIODeadline) {
            if case .waiting = inbound { inbound = .head(since: now) }
        }

        /// A request head; `closing`: it says `Connection: close`, so the server reads nothing after its response.
        mutating func headRead(now: NIODeadline, closing: Bool = false) {
            owed += 1
            inbound = .body(since: now)
            if closing { lastRequestCloses = true }
        }

        mutating func endRead(now: NIODeadline) {
            inbound = .waiting(since: now)
        }

        /// A response head is written. A 413 while its body still comes ends the
        /// connection: what is left of the body is not worth reading; so does a
        /// response that says `Connection: close` itself (Storage's refusals of an
        /// upload, which storage-api answers 400). True when the head should say
        /// `Connection: close`.
        mutating func responseHeadWritten(status: HTTPResponseStatus, closing: Bool = false) -> Bool {
            responding = true
            if status == .payloadTooLarge, case .body = inbound, owed == 1 { closeAfterResponse = true }
            if closing, owed == 1 { closeAfterResponse = true }
            return closeAfterResponse
        }

        mutating func responseEndWritten(now: NIODeadline) -> Action {
            responding = false
            owed = max(0, owed - 1)
            if closeAfterResponse {
                closed = true
                return .close
            }
            if let refusal, owed == 0 {
                closed = true
                return .answer(refusal)
            }
            // Answered before its body was read (a 401 to an upload) and the client asked to close: the application
            // reads no more, so this side drains the rest (`.close` lingers) rather than leave the client's send stuck.
            if lastRequestCloses, owed == 0, case .body = inbound {
                closed = true
                return .close
            }
            // Nothing under way: the idle clock starts now.
            if owed == 0, case .waiting = inbound { inbound = .waiting(since: now) }
            return .none
        }

        /// The clock ran out (the handler checks `deadline` against now first).
        mutating func timedOut() -> Action {
            guard let deadline, !closed else { return .none }
            closed = true
            switch deadline {
            case .idle:
                return .close
            case .head:
                // A response still owed to an earlier request cannot be cut into.
                return owed == 0 ? .answer(.requestTimeout) : .close
            case .body:
                return owed == 1 && !responding ? .answer(.requestTimeout) : .close
            }
        }

        /// The request could not be parsed: too big a head is 431, anything else 400. Behind requests still
        /// owed an answer it waits for them (`refusal`, answered by `responseEndWritten`): nothing is done now.
        mutating func badRequest(headerOverflow: Bool) -> Action {
            guard !closed, refusal == nil else { return .none }
            let status: HTTPResponseStatus = headerOverflow ? .requestHeaderFieldsTooLarge : .badRequest
            switch inbound {
            case .waiting, .head:
                guard owed == 0 else {
                    // The earlier requests are answered first; no clock runs while the server works on them.
                    refusal = status
                    inbound = .waiting(since: .now())
                    return .none
                }
            case .body:
                // A bad body: its request is owed an answer, unless one has begun or others come first.
                guard owed == 1, !responding else {
                    closed = true
                    return .close
                }
            }
            closed = true
            return .answer(status)
        }

        /// Whether what the decoder sends now is dropped: it comes after a request that could not be parsed.
        var refusing: Bool { refusal != nil }

        /// The server is shutting down: a connection with nothing owed closes now,
        /// one with a request under way after its response.
        mutating func quiesce() -> Action {
            guard !closed, refusal == nil else { return .none }
            guard owed == 0 else {
                closeAfterResponse = true
                return .none
            }
            closed = true
            return .close
        }

        /// The connection closed, or the guard handed it over (WebSocket).
        mutating func finish() {
            closed = true
        }

        static func amount(_ seconds: Double) -> TimeAmount {
            .nanoseconds(Int64((seconds * 1e9).rounded()))
        }
    }
}
