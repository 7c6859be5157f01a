import Foundation
import SwitchboardCore
import SwitchboardEngine
import TestSupport
import Testing

@Suite("TimelineWindow")
struct TimelineWindowTests {
    // MARK: apply

    @Test("apply keeps messages ordered whatever the arrival order", arguments: [UInt64(1), 2, 3, 4])
    func applyOrders(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        var window = TimelineWindow(limit: 50)
        for message in Fixture.messages(1...20).shuffled(using: &generator) { window.apply(message) }
        #expect(window.messages.ids == Fixture.messages(1...20).ids)
        #expect(window.oldest == Fixture.message("m01", at: 1).position)
        #expect(window.newest == Fixture.message("m20", at: 20).position)
    }

    @Test("equal timestamps are ordered by identifier")
    func applyTieBreak() {
        var window = TimelineWindow(limit: 10)
        window.apply(Fixture.message("c", at: 5))
        window.apply(Fixture.message("a", at: 5))
        window.apply(Fixture.message("b", at: 5))
        window.apply(Fixture.message("z", at: 4))
        #expect(window.messages.ids == ["z", "a", "b", "c"])
    }

    @Test("apply replaces a message with the same ID in place")
    func applyReplaces() {
        var window = TimelineWindow(limit: 10)
        for message in Fixture.messages(1...3) { window.apply(message) }
        window.apply(Fixture.message("m02", at: 2, text: "edited"))
        #expect(window.messages.ids == ["m01", "m02", "m03"])
        #expect(window.messages[1].content.text == "edited")
    }

    @Test("apply moves a message whose position changed")
    func applyMoves() {
        var window = TimelineWindow(limit: 10)
        for message in Fixture.messages(1...4) { window.apply(message) }
        window.apply(Fixture.message("m01", at: 3.5, text: "server time"))
        #expect(window.messages.ids == ["m02", "m03", "m01", "m04"])
        #expect(window.messages[2].content.text == "server time")
        window.apply(Fixture.message("m04", at: 0.5))
        #expect(window.messages.ids == ["m04", "m02", "m03", "m01"])
        #expect(window.messages.count == 4, "no duplicates after moves")
    }

    @Test("apply trims the oldest beyond the limit and sets hasOlder")
    func applyTrims() {
        var window = TimelineWindow(limit: 3)
        window.hasOlder = false
        for message in Fixture.messages(1...3) { window.apply(message) }
        #expect(window.messages.ids == ["m01", "m02", "m03"])
        #expect(!window.hasOlder, "nothing trimmed yet")
        window.apply(Fixture.message("m04", at: 4))
        window.apply(Fixture.message("m05", at: 5))
        #expect(window.messages.ids == ["m03", "m04", "m05"])
        #expect(window.hasOlder)
        #expect(!window.hasNewer)
    }

    @Test("a full window ignores messages older than its oldest")
    func fullWindowIgnoresOlder() {
        var window = TimelineWindow(limit: 3)
        for message in Fixture.messages(2...4) { window.apply(message) }
        window.apply(Fixture.message("m01", at: 1))
        #expect(window.messages.ids == ["m02", "m03", "m04"])
        #expect(!window.covers(Fixture.message("m01", at: 1).position))
        #expect(window.covers(Fixture.message("m05", at: 5).position))
        #expect(window.covers(Fixture.message("x", at: 3).position))
    }

    @Test("a full window accepts a message inside its range, trimming the oldest")
    func fullWindowAcceptsInside() {
        var window = TimelineWindow(limit: 3)
        window.hasOlder = false
        for message in Fixture.messages([1, 3, 5]) { window.apply(message) }
        window.apply(Fixture.message("m02", at: 2))
        #expect(window.messages.ids == ["m02", "m03", "m05"])
        #expect(window.hasOlder)
    }

    @Test("a window with newer messages trimmed ignores messages past its newest")
    func hasNewerIgnoresNewer() {
        var window = Fixture.window(limit: 3, newest: 5...7, hasOlder: true)
        window.prepend(Fixture.messages(3...4))
        #expect(window.messages.ids == ["m03", "m04", "m05"])
        #expect(window.hasNewer)
        window.apply(Fixture.message("m08", at: 8))
        #expect(window.messages.ids == ["m03", "m04", "m05"])
        #expect(!window.covers(Fixture.message("m08", at: 8).position))
        window.remove("m04")
        window.apply(Fixture.message("m09", at: 9))
        #expect(window.messages.ids == ["m03", "m05"], "still ignored below the limit while hasNewer")
        window.apply(Fixture.message("m04", at: 4))
        #expect(window.messages.ids == ["m03", "m04", "m05"])
    }

    @Test("a message moving out of a hasNewer window's range leaves it")
    func movesOutOfRange() {
        var window = Fixture.window(limit: 3, newest: 5...7, hasOlder: true)
        window.prepend(Fixture.messages(3...4))
        window.apply(Fixture.message("m04", at: 20))
        #expect(window.messages.ids == ["m03", "m05"])
    }

    // MARK: prepend

    @Test("prepend adds an older page (any order) without duplicates")
    func prependAdds() {
        var window = Fixture.window(limit: 10, newest: 6...8, hasOlder: true)
        var page = Fixture.messages(3...6)
        page.reverse()
        page.append(Fixture.message("m07", at: 7, text: "stale copy"))
        window.prepend(page)
        #expect(window.messages.ids == Fixture.messages(3...8).ids)
        #expect(window.messages.first { $0.id == "m07" }?.content.text == "m07", "existing copy kept")
        #expect(!window.hasNewer)
    }

    @Test("prepend drops duplicates within the page itself")
    func prependDuplicatesInPage() {
        var window = Fixture.window(limit: 10, newest: 5...5, hasOlder: true)
        window.prepend(Fixture.messages([1, 2, 2, 1]))
        #expect(window.messages.ids == ["m01", "m02", "m05"])
    }

    @Test("prepend trims the newest beyond the limit and sets hasNewer")
    func prependTrimsNewest() {
        var window = Fixture.window(limit: 5, newest: 6...9, hasOlder: true)
        window.prepend(Fixture.messages(3...5))
        #expect(window.messages.ids == Fixture.messages(3...7).ids)
        #expect(window.hasNewer)
        #expect(window.newest == Fixture.message("m07", at: 7).position)
    }

    @Test("reset clears hasNewer and keeps the newest messages")
    func resetClearsHasNewer() {
        var window = Fixture.window(limit: 3, newest: 5...7, hasOlder: true)
        window.prepend(Fixture.messages(3...4))
        #expect(window.hasNewer)
        window.reset(newest: Fixture.messages([9, 8]), hasOlder: false)
        #expect(window.messages.ids == ["m08", "m09"])
        #expect(!window.hasNewer)
        #expect(!window.hasOlder)
    }

    // MARK: remove, limits

    @Test("remove drops a message; removing an unknown ID does nothing")
    func remove() {
        var window = TimelineWindow(limit: 10)
        for message in Fixture.messages(1...3) { window.apply(message) }
        window.remove("m02")
        #expect(window.messages.ids == ["m01", "m03"])
        window.remove("nope")
        #expect(window.messages.ids == ["m01", "m03"])
        window.remove("m01")
        window.remove("m03")
        #expect(window.messages.isEmpty)
        #expect(window.oldest == nil)
        #expect(window.newest == nil)
    }

    @Test("the limit is at least one")
    func minimumLimit() {
        var window = TimelineWindow(limit: 0)
        #expect(window.limit == 1)
        window.apply(Fixture.message("m01", at: 1))
        window.apply(Fixture.message("m02", at: 2))
        #expect(window.messages.ids == ["m02"])
    }

    @Test("a new window is empty, starts at the beginning and has no newer ones")
    func initialState() {
        let window = TimelineWindow(limit: 5)
        #expect(window.messages.isEmpty)
        #expect(!window.hasOlder)
        #expect(!window.hasNewer)
        #expect(window.covers(Fixture.message("x", at: 1).position))
    }

    // MARK: Known issues

    /// The engine opens a conversation with `reset(newest: pageSize rows, hasOlder: true)`, so the window is
    /// usually far below its limit. A receipt, reaction or edit on an older message then arrives through `apply`;
    /// it must not be placed in front of the window, or `loadOlder` (which pages before `window.oldest`) skips
    /// everything between it and the page.
    @Test("a partly filled window with older messages beyond it ignores a message older than its oldest")
    func partialWindowIgnoresOlderWhenHasOlder() {
        var window = Fixture.window(limit: 10, newest: 50...54, hasOlder: true)
        window.apply(Fixture.message("m01", at: 1))
        #expect(window.messages.ids == Fixture.messages(50...54).ids)
        #expect(window.oldest == Fixture.message("m50", at: 50).position)
    }

    @Test("a partly filled window with nothing older accepts a message older than its oldest")
    func partialWindowAcceptsOlderWhenComplete() {
        var window = Fixture.window(limit: 10, newest: 50...54, hasOlder: false)
        window.apply(Fixture.message("m01", at: 1))
        #expect(window.messages.ids == Fixture.messages([1, 50, 51, 52, 53, 54]).ids)
    }

    @Test("reset that trims the page marks older messages as present")
    func resetTrimSetsHasOlder() {
        let window = Fixture.window(limit: 3, newest: 1...5, hasOlder: false)
        #expect(window.messages.ids == ["m03", "m04", "m05"])
        #expect(window.hasOlder)
    }

    @Test("a long live stream keeps exactly the newest `limit`, forgets trimmed IDs and still edits and moves in place")
    func longStreamThroughTrimmedStorage() {
        var window = TimelineWindow(limit: 4)
        for message in Fixture.messages(1...23) { window.apply(message) }
        #expect(window.messages.ids == Fixture.messages(20...23).ids)
        #expect(window.count == 4)
        #expect(!window.contains("m19") && window.contains("m20"))
        window.remove("m05")  // trimmed long ago: nothing happens
        window.apply(Fixture.message("m21", at: 21, text: "edited"))
        window.apply(Fixture.message("m20", at: 22.5, text: "moved"))
        #expect(window.messages.ids == ["m21", "m22", "m20", "m23"])
        #expect(window.messages.map(\.content.text)[0] == "edited")
        window.apply(Fixture.message("m10", at: 10))  // older than the oldest of a trimmed window: ignored
        #expect(window.messages.ids == ["m21", "m22", "m20", "m23"])
        window.remove("m22")
        #expect(window.messages.ids == ["m21", "m20", "m23"] && !window.contains("m22"))
    }
}
