import Foundation
import SwitchboardCore

/// One live subscription: a member's stream on one conversation.
struct Subscriber: Sendable {
    let user: UserID
    let conversation: ConversationID
    let continuation: AsyncStream<AdapterEvent>.Continuation
    /// Set while the stream is down after `dropLiveStreams()`; the reconnect of that drop clears it.
    var droppedEpoch: UInt64?
    /// A change held back to be delivered after the next one (out-of-order fault).
    var held: AdapterEvent?
}

extension ServerState {
    /// Whether a subscriber's connection is up (not dropped, its user not offline).
    func isLive(_ subscriber: Subscriber) -> Bool {
        subscriber.droppedEpoch == nil && !faults.offlineUsers.contains(subscriber.user)
    }

    /// Registers a stream; its first event is `.connected` (or `.disconnected` while its user is offline).
    /// Returns nil, after telling the stream why, when the user may not subscribe; the caller then finishes it.
    mutating func subscribe(to conversation: ConversationID, as user: UserID,
                            continuation: AsyncStream<AdapterEvent>.Continuation) -> UInt64? {
        do {
            try requireMember(user, of: conversation)
        } catch {
            continuation.yield(.connection(.disconnected(reason: String(describing: error))))
            return nil
        }
        nextSubscriberToken += 1
        let subscriber = Subscriber(user: user, conversation: conversation, continuation: continuation)
        subscribers[nextSubscriberToken] = subscriber
        if isLive(subscriber) {
            continuation.yield(.connection(.connected))
        } else {
            continuation.yield(.connection(.disconnected(reason: "\(user) is offline (injected)")))
        }
        return nextSubscriberToken
    }

    /// Delivers a change to every live subscriber of the conversation, the sender included (the echo).
    mutating func deliver(_ change: RemoteChange, in conversation: ConversationID) {
        let event = AdapterEvent.change(change)
        for token in subscribers.keys {
            guard var subscriber = subscribers[token], subscriber.conversation == conversation,
                  isLive(subscriber) else { continue }
            if faults.outOfOrderDelivery {
                if let held = subscriber.held {
                    emit(event, to: subscriber)
                    emit(held, to: subscriber)
                    subscriber.held = nil
                } else {
                    subscriber.held = event
                }
                subscribers[token] = subscriber
            } else {
                emit(event, to: subscriber)
            }
        }
    }

    /// Delivers a typing indicator to the other live members only; nothing is stored.
    func deliverTyping(_ isTyping: Bool, in conversation: ConversationID, from user: UserID) {
        let event = AdapterEvent.typing(conversation: conversation, user: user, isTyping: isTyping)
        for subscriber in subscribers.values
        where subscriber.conversation == conversation && subscriber.user != user && isLive(subscriber) {
            emit(event, to: subscriber)
        }
    }

    /// Yields an event, twice under the duplicate-delivery fault.
    func emit(_ event: AdapterEvent, to subscriber: Subscriber) {
        subscriber.continuation.yield(event)
        if faults.duplicateDeliveries { subscriber.continuation.yield(event) }
    }

    /// Delivers a held change now.
    mutating func flushHeld(_ token: UInt64) {
        guard let subscriber = subscribers[token], let held = subscriber.held else { return }
        subscribers[token]?.held = nil
        emit(held, to: subscriber)
    }

    /// Delivers every held change (when the out-of-order fault is switched off).
    mutating func flushAllHeld() {
        for token in subscribers.keys { flushHeld(token) }
    }

    /// Takes a live stream down: flushes what it held, then tells it why.
    mutating func disconnect(_ token: UInt64, reason: String) {
        flushHeld(token)
        subscribers[token]?.continuation.yield(.connection(.disconnected(reason: reason)))
    }

    /// Drops every current stream; returns the drop's epoch, which `reconnect(epoch:)` later restores.
    mutating func dropLiveStreams() -> UInt64 {
        dropEpoch += 1
        for token in subscribers.keys {
            guard let subscriber = subscribers[token] else { continue }
            if isLive(subscriber) { disconnect(token, reason: "connection dropped (injected)") }
            subscribers[token]?.droppedEpoch = dropEpoch
        }
        return dropEpoch
    }

    /// Brings back the streams of one drop (unless dropped again since); each live one hears `.connected`.
    mutating func reconnect(epoch: UInt64) {
        for token in subscribers.keys where subscribers[token]?.droppedEpoch == epoch {
            subscribers[token]?.droppedEpoch = nil
            if let subscriber = subscribers[token], isLive(subscriber) {
                subscriber.continuation.yield(.connection(.connected))
            }
        }
    }

    /// Takes a user offline (their streams go down) or back online (their streams hear `.connected`).
    mutating func setOffline(_ user: UserID, _ offline: Bool) {
        guard faults.offlineUsers.contains(user) != offline else { return }
        if offline {
            for token in subscribers.keys {
                guard let subscriber = subscribers[token], subscriber.user == user, isLive(subscriber) else { continue }
                disconnect(token, reason: "\(user) is offline (injected)")
            }
            faults.offlineUsers.insert(user)
        } else {
            faults.offlineUsers.remove(user)
            for subscriber in subscribers.values where subscriber.user == user && isLive(subscriber) {
                subscriber.continuation.yield(.connection(.connected))
            }
        }
    }

    /// Removes every subscriber, returning their continuations so the caller can finish them outside the lock.
    mutating func removeAllSubscribers() -> [AsyncStream<AdapterEvent>.Continuation] {
        let continuations = subscribers.values.map(\.continuation)
        subscribers.removeAll()
        return continuations
    }
}
