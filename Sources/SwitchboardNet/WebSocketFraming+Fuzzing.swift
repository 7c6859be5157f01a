import Foundation

/// The fuzz targets' way into the WebSocket framing internals: the frame parser (both roles), the
/// frame encoder, close payloads and `WebSocketStateMachine`, which are not public API.
public enum WebSocketFramingFuzzing {
    /// Feeds `stream` (bytes from a server, or from a client when `expectsMasked`) to the frame parser in chunks of `chunkSizes` (cycled) and every frame to
    /// a state machine; returns the first broken invariant, nil when all hold.
    ///
    /// Checked: any chunking yields the frames (and the violation) of a single read; every frame encodes back to
    /// itself, masked or not; close payloads round-trip; the machine never delivers after it stopped reading,
    /// delivers at most one close, and never a message above its limit.
    public static func check(stream: [UInt8], chunkSizes: [Int], maxFramePayload: Int, maxMessageSize: Int,
                             expectsMasked: Bool = false) -> String? {
        let whole = frames(of: stream, chunkSizes: [max(1, stream.count)], maxFramePayload: maxFramePayload,
                           expectsMasked: expectsMasked)
        let chunked = frames(of: stream, chunkSizes: chunkSizes.map { max(1, $0) }, maxFramePayload: maxFramePayload,
                             expectsMasked: expectsMasked)
        guard whole.frames == chunked.frames, whole.violation == chunked.violation else {
            return "chunks \(chunkSizes) framed \(chunked.frames.count) frames (\(String(describing: chunked.violation))), "
                + "one read \(whole.frames.count) (\(String(describing: whole.violation)))"
        }
        var machine = WebSocketStateMachine(maxMessageSize: maxMessageSize)
        var stopped = false
        var closes = 0
        for frame in whole.frames {
            if let problem = checkEncoding(frame, maxFramePayload: maxFramePayload) { return problem }
            let reaction = machine.frameReceived(bits: frame.bits, payload: frame.payload)
            if stopped, !reaction.deliver.isEmpty { return "delivered \(reaction.deliver) after it stopped reading" }
            for delivered in reaction.deliver {
                switch delivered {
                case .text(let text):
                    if text.utf8.count > maxMessageSize { return "delivered a text above \(maxMessageSize) bytes" }
                case .binary(let data):
                    if data.count > maxMessageSize { return "delivered a binary message above \(maxMessageSize) bytes" }
                case .close: closes += 1
                }
            }
            if !reaction.keepReading { stopped = true }
        }
        if let close = machine.connectionEnded(), case .close = close { closes += 1 }
        guard closes <= 1 else { return "delivered \(closes) close frames" }
        if machine.canSend { return "the machine can still send after the connection ended" }
        return nil
    }

    /// The frames of `stream` read in chunks, and the violation that stopped the reading, if any.
    private static func frames(of stream: [UInt8], chunkSizes: [Int], maxFramePayload: Int,
                               expectsMasked: Bool) -> (frames: [WebSocketFrameParser.Frame], violation: WebSocketFrameParser.Violation?) {
        var parser = WebSocketFrameParser(maxFramePayload: maxFramePayload, expectsMasked: expectsMasked)
        var frames: [WebSocketFrameParser.Frame] = []
        var offset = 0
        var turn = 0
        while offset < stream.count {
            let end = min(stream.count, offset + chunkSizes[turn % chunkSizes.count])
            parser.append(stream[offset..<end])
            offset = end
            turn += 1
            do {
                while let frame = try parser.next() { frames.append(frame) }
            } catch {
                return (frames, error)
            }
        }
        return (frames, nil)
    }

    /// A final frame without reserved bits must encode (unmasked) to bytes that frame back to it, and masking
    /// must be undone by the same key; a close payload must encode back to its code and reason.
    private static func checkEncoding(_ frame: WebSocketFrameParser.Frame, maxFramePayload: Int) -> String? {
        let opcode = frame.bits & 0x0F
        if frame.bits & 0xF0 == 0x80 {
            let encoded = WebSocketFrameEncoder.encode(WebSocketOutgoingFrame(opcode: opcode, payload: frame.payload), maskingKey: nil)
            var parser = WebSocketFrameParser(maxFramePayload: maxFramePayload)
            parser.append(encoded)
            guard let again = try? parser.next(), again == frame, parser.bufferedCount == 0 else {
                return "frame \(frame.bits) of \(frame.payload.count) bytes does not frame back from its encoding"
            }
            let key: UInt32 = 0xA1B2_C3D4
            let masked = [UInt8](WebSocketFrameEncoder.encode(WebSocketOutgoingFrame(opcode: opcode, payload: frame.payload), maskingKey: key))
            let mask = (0..<4).reversed().map { UInt8(truncatingIfNeeded: key >> ($0 * 8)) }
            let payload = masked.suffix(frame.payload.count).enumerated().map { $1 ^ mask[$0 & 3] }
            guard masked[1] & 0x80 != 0, Data(payload) == frame.payload else {
                return "masking a frame of \(frame.payload.count) bytes does not undo"
            }
        }
        if opcode == WebSocketOpcode.close, frame.payload.count <= 125, case .success(let (code, reason)) = WebSocketClosePayload.decode(frame.payload),
           code.isValidOnTheWire {
            let again = WebSocketClosePayload.decode(WebSocketClosePayload.encode(code: code, reason: reason))
            guard case .success(let (codeAgain, reasonAgain)) = again, codeAgain == code, reasonAgain == reason else {
                return "close payload \(code) \(reason) came back as \(again)"
            }
        }
        return nil
    }
}
