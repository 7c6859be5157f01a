import Testing
@testable import SocketIOServer

/// Placeholder suite until the server tests land.
@Suite struct SocketIOServerPlaceholderTests {
    @Test func placeholder() { #expect(Bool(true)) }
}
