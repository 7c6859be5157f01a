import SupabaseAdapter
import SupabaseProtocol
import Testing

/// Presence bookkeeping: state replaces, diffs adjust, a user stays online while any device is present.
@Suite("Presence roster")
struct PresenceRosterTests {
    @Test("state, joins and leaves per phx_ref; a user with two devices stays online until both leave")
    func roster() {
        var roster = PresenceRoster()
        roster.applyState(["alice": ["metas": [["phx_ref": "a1"]]], "bob": ["metas": [["phx_ref": "b1"]]]])
        #expect(roster.online == ["alice", "bob"])
        roster.applyDiff(["joins": ["alice": ["metas": [["phx_ref": "a2"]]]], "leaves": [:]])
        roster.applyDiff(["joins": [:], "leaves": ["alice": ["metas": [["phx_ref": "a1"]]]]])
        #expect(roster.online == ["alice", "bob"])
        roster.applyDiff(["joins": [:], "leaves": ["alice": ["metas": [["phx_ref": "a2"]]], "bob": ["metas": [["phx_ref": "b1"]]]]])
        #expect(roster.online.isEmpty)
        roster.applyDiff(["joins": ["carol": ["metas": [["phx_ref": "c1"]]]], "leaves": [:]])
        roster.applyState(["dave": ["metas": [["phx_ref": "d1"]]]])
        #expect(roster.online == ["dave"])
    }
}
