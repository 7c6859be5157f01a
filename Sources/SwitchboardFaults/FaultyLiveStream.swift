import Foundation
import SwitchboardCore

/// One live stream of a `FaultInjectingAdapter`: it relays an inner adapter's live stream and applies the live
/// faults at that boundary. A cut (a drop, or the user going offline) cancels the inner stream, so the inner
/// adapter closes its connection, and reports `.disconnected`; after the reconnect delay (and once the user is
/// online) it subscribes to the inner adapter again, whose `.connected` makes the engine catch up by delta sync.
/// Changes are duplicated or held back in swapped pairs while those faults are on.
///
/// Everything (inner events, fault signals, reconnect timers) goes through one queue read by one task, so the
/// relay's state needs no lock.
enum FaultyLiveStream {
    private enum Input: Sendable {
        case event(AdapterEvent, generation: Int)
        case ended(generation: Int)
        case signal(InjectedFaults.LiveSignal)
        case reconnectDue
    }

    /// The relay state, owned by the reading task.
    private struct Relay {
        let user: UserID
        let faults: InjectedFaults
        let open: @Sendable () -> AsyncStream<AdapterEvent>
        let output: AsyncStream<AdapterEvent>.Continuation
        let input: AsyncStream<Input>.Continuation
        var generation = 0
        var pump: Task<Void, Never>?
        var held: AdapterEvent?
        var reconnecting = false
        /// Whether the inner stream has said `.connected` (and not `.disconnected` since).
        var isConnected = false

        /// Subscribes to the inner adapter; its events are queued under a new generation.
        mutating func connect() {
            generation += 1
            isConnected = false
            let generation = self.generation, stream = open(), input = self.input
            pump = Task {
                for await event in stream { input.yield(.event(event, generation: generation)) }
                input.yield(.ended(generation: generation))
            }
        }

        /// Cuts the inner stream if one is open, and schedules the reconnect.
        mutating func cut(reason: String) {
            guard let pump else { return }
            pump.cancel()
            self.pump = nil
            generation += 1
            if isConnected { faults.recordCut() }
            isConnected = false
            flush()
            output.yield(.connection(.disconnected(reason: reason)))
            reconnecting = true
            let delay = faults.reconnectDelay, input = self.input
            Task {
                try? await Task.sleep(for: delay)
                input.yield(.reconnectDue)
            }
        }

        /// Connects when down, not waiting for a reconnect, and online.
        mutating func connectIfDue() {
            guard pump == nil, !reconnecting, !faults.isOffline(user) else { return }
            connect()
        }

        /// Passes an inner event on under the delivery faults.
        mutating func deliver(_ event: AdapterEvent) {
            guard case .change = event else {
                if case .connection(let state) = event { isConnected = state == .connected }
                flush()
                output.yield(event)
                return
            }
            let (duplicates, reorders) = faults.delivery
            if reorders {
                if let first = held {
                    held = nil
                    output.yield(event)
                    output.yield(first)
                } else {
                    held = event
                }
                return
            }
            flush()
            output.yield(event)
            if duplicates { output.yield(event) }
        }

        /// Delivers the change held back by the reorder fault, if any.
        mutating func flush() {
            guard let first = held else { return }
            held = nil
            output.yield(first)
        }
    }

    /// The relayed stream of `user`'s inner stream `open` makes; ends when its consumer stops, or when the inner
    /// stream ends on its own.
    static func make(for user: UserID, faults: InjectedFaults,
                     open: @escaping @Sendable () -> AsyncStream<AdapterEvent>) -> AsyncStream<AdapterEvent> {
        let (stream, output) = AsyncStream<AdapterEvent>.makeStream(bufferingPolicy: .unbounded)
        let (inputs, input) = AsyncStream<Input>.makeStream(bufferingPolicy: .unbounded)
        let observer = faults.addObserver(for: user) { input.yield(.signal($0)) }
        let reader = Task {
            var relay = Relay(user: user, faults: faults, open: open, output: output, input: input)
            relay.connectIfDue()
            reading: for await item in inputs {
                switch item {
                case .event(let event, let generation):
                    if generation == relay.generation { relay.deliver(event) }
                case .ended(let generation):
                    // The inner stream ended without a cut: the relay ends with it.
                    if generation == relay.generation { break reading }
                case .signal(.cut(let reason)):
                    relay.cut(reason: reason)
                case .signal(.online):
                    relay.connectIfDue()
                case .signal(.flush):
                    relay.flush()
                case .reconnectDue:
                    relay.reconnecting = false
                    relay.connectIfDue()
                }
            }
            relay.pump?.cancel()
            relay.flush()
            faults.removeObserver(observer)
            output.finish()
        }
        output.onTermination = { _ in
            reader.cancel()
            input.finish()
        }
        return stream
    }
}
