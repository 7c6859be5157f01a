import SwitchboardCore

extension BridgeDecision {
    /// What the bridge does after a failure: a pure function of the error's classification (its code and whether
    /// a retry can help, as `SwitchboardError.wrapping` gives it), so the bridge, the worker and the migration
    /// retry exactly what a retry can fix (`BridgeDecisionTests`).
    enum Failure: Sendable, Hashable {
        /// A retry may succeed (transport, HTTP 408/429/5xx, a busy or locked store, a serialization failure, a
        /// lost store connection, a cancellation): back off, waiting at least `after` when the server said so.
        case retry(after: Duration?)
        /// The change itself cannot cross (refused, invalid, too large, a conflict, or an unexpected error while
        /// handling it): hold it in the quarantine with the reason and go on with the next.
        case hold
        /// No retry fixes it and it is not one change's: stop the direction until the bridge is restarted or
        /// reloaded (`stop(.access)`: credentials, access to a conversation, a conversation that is gone;
        /// `stop(.store)`: the local store is full, read-only, damaged or failing; `stop(.other)`: anything else).
        case stop(StopCause)
    }

    /// Why a direction stops.
    enum StopCause: Sendable, Hashable {
        /// The account's credentials or its access to a conversation.
        case access
        /// The local store.
        case store
        /// Any other failure no retry fixes (a non-retryable transport error, say).
        case other
    }

    /// What to do after `error` in the handling of one change (`hold` is only for changes; a pass that fails
    /// with what would be held came from reading the source or the store, and stops its direction).
    static func failure(_ error: any Error) -> Failure {
        let error = SwitchboardError.wrapping(error)
        switch error.code {
        case .unauthorized, .forbidden, .unknownConversation:
            return .stop(.access)  // whatever a server says about retrying, these need the account or config fixed
        case .cancelled:
            return .retry(after: nil)
        default:
            break
        }
        if error.isRetryable { return .retry(after: error.retryAfter) }
        switch error.code {
        case .conflict, .invalidArgument, .contentTooLarge, .emptyMessage, .refused, .notOwner, .notSupported,
             .unknownMessage, .editWindowExpired, .deleteWindowExpired, .alreadyPublished, .notFound, .internal:
            return .hold
        case .storage, .corruptStore:
            return .stop(.store)
        default:
            return .stop(.other)
        }
    }
}
