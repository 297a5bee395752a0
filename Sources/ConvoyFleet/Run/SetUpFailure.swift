import ConvoyWire

/// What stops set-up, said so that a user knows what to do: the request that failed, and for a 429 that it is
/// the server's rate limit (a fleet signs up and signs in from one address) and how to lift it.
enum SetUpFailure {
    static let rateLimitHint = "the server's rate limit refused it (all the phones come from one address), not a fault of the run: "
        + "start convoy serve with --rate-limits off (QuickPic's logins: a larger --login-limit), or raise the project's limits "
        + "(hosted Supabase: Authentication → Rate Limits, 30 sign-ups and sign-ins per 5 minutes per IP by default)"

    /// `error` with its request named and, for a 429, the rate limit's hint; other errors as they are.
    static func explaining(_ error: any Error) -> any Error {
        guard let e = error as? SupabaseError else { return error }
        var message = e.message
        if let request = e.request, !message.contains(request) { message += " (\(request))" }
        if e.status == 429, !message.contains(rateLimitHint) { message += ": " + rateLimitHint }
        var explained = SupabaseError(kind: e.kind, message: message)
        explained.request = e.request
        return explained
    }
}
