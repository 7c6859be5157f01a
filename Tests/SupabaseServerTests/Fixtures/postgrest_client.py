"""Drives /rest/v1 with the OFFICIAL supabase Python client (supabase / postgrest packages).

Usage: postgrest_client.py BASE_URL
Environment: SUPABASE_ANON_KEY, SUPABASE_USER_TOKEN (alice, a member of CONVERSATION_ID),
CONVERSATION_ID, OTHER_CONVERSATION_ID (a conversation alice is not in, holding at least one message).
Asserts as it goes; on failure prints a clear message to stderr and exits 1. On success prints one JSON summary line.
"""

import json
import os
import sys

from postgrest.exceptions import APIError
from supabase import ClientOptions, create_client

from fixture_checks import check, fail


def main():
    if len(sys.argv) != 2:
        fail("usage: postgrest_client.py BASE_URL")
    base_url = sys.argv[1]
    try:
        anon_key = os.environ["SUPABASE_ANON_KEY"]
        user_token = os.environ["SUPABASE_USER_TOKEN"]
        conversation = os.environ["CONVERSATION_ID"]
        other = os.environ["OTHER_CONVERSATION_ID"]
    except KeyError as missing:
        fail(f"environment variable {missing} is not set")

    client = create_client(base_url, anon_key, options=ClientOptions(
        headers={"Authorization": f"Bearer {user_token}"}, auto_refresh_token=False, persist_session=False))
    summary = {}

    # Insert a batch, then select with filters, order and range.
    rows = [{"conversation_id": conversation, "sender_id": "alice", "body": f"py{i}"} for i in range(5)]
    inserted = client.table("messages").insert(rows).execute()
    check(len(inserted.data) == 5, f"bulk insert returned {inserted.data!r}")
    check([r["body"] for r in inserted.data] == ["py0", "py1", "py2", "py3", "py4"],
          f"bulk insert bodies {inserted.data!r}")
    summary["inserted"] = len(inserted.data)

    page = (client.table("messages").select("body", count="exact")
            .eq("conversation_id", conversation).like("body", "py*").neq("body", "py0")
            .order("body", desc=True).range(1, 2).execute())
    check([r["body"] for r in page.data] == ["py3", "py2"], f"ranged select returned {page.data!r}")
    check(page.count == 4, f"count=exact gave {page.count!r}")
    summary["page"] = [r["body"] for r in page.data]
    summary["count"] = page.count

    listed = (client.table("messages").select("id,body").eq("conversation_id", conversation)
              .in_("body", ["py1", "py4"]).order("body").execute())
    check([r["body"] for r in listed.data] == ["py1", "py4"], f"in_ select returned {listed.data!r}")

    single = client.table("messages").select("body").eq("body", "py2").eq("conversation_id", conversation) \
        .single().execute()
    check(single.data == {"body": "py2"}, f"single() returned {single.data!r}")

    # Upsert with ignore_duplicates: the replay returns no rows.
    message_id = inserted.data[0]["id"]
    reaction = {"message_id": message_id, "user_id": "alice", "symbol": "+1"}
    first = client.table("reactions").upsert(reaction, ignore_duplicates=True,
                                             on_conflict="message_id,user_id,symbol").execute()
    check(len(first.data) == 1, f"first upsert returned {first.data!r}")
    replay = client.table("reactions").upsert(reaction, ignore_duplicates=True,
                                              on_conflict="message_id,user_id,symbol").execute()
    check(replay.data == [], f"replayed upsert returned {replay.data!r} instead of []")
    summary["upsert_replay"] = replay.data

    # Merge upsert updates in place.
    receipt = {"message_id": message_id, "user_id": "alice", "state": "delivered"}
    client.table("receipts").upsert(receipt, on_conflict="message_id,user_id").execute()
    merged = client.table("receipts").upsert(dict(receipt, state="read"), on_conflict="message_id,user_id").execute()
    check([r["state"] for r in merged.data] == ["read"], f"merge upsert returned {merged.data!r}")

    # Update and delete through filters.
    updated = client.table("messages").update({"body": "py0 edited"}).eq("id", message_id).execute()
    check([r["body"] for r in updated.data] == ["py0 edited"], f"update returned {updated.data!r}")
    deleted = client.table("messages").delete().eq("body", "py4").eq("conversation_id", conversation).execute()
    check(len(deleted.data) == 1, f"delete returned {deleted.data!r}")

    # Renamed and cast columns, containment on jsonb, regular expressions, full-text search.
    client.table("messages").update({"metadata": {"kind": "note", "tags": ["a", "b"]}}).eq("body", "py2").execute()
    mine = lambda: client.table("messages").select("body").eq("conversation_id", conversation)
    renamed = (client.table("messages").select("text:body,id_text:id::text,created_at::text")
               .eq("id", message_id).execute())
    check(renamed.data == [{"text": "py0 edited", "id_text": message_id, "created_at": renamed.data[0]["created_at"]}]
          and isinstance(renamed.data[0]["created_at"], str), f"alias and cast returned {renamed.data!r}")
    noted = mine().contains("metadata", {"kind": "note"}).execute()
    check([r["body"] for r in noted.data] == ["py2"], f"contains on jsonb returned {noted.data!r}")
    within = mine().contained_by("metadata", {"kind": "note", "tags": ["a", "b"], "extra": 1}).order("body").execute()
    check([r["body"] for r in within.data] == ["py0 edited", "py1", "py2", "py3"], f"contained_by returned {within.data!r}")
    either = mine().or_('metadata.cs.{"kind":"note"},body.eq.py3').order("body").execute()
    check([r["body"] for r in either.data] == ["py2", "py3"], f"or with cs returned {either.data!r}")
    matched = mine().filter("body", "match", "^py[13]$").order("body").execute()
    check([r["body"] for r in matched.data] == ["py1", "py3"], f"match returned {matched.data!r}")
    found = mine().text_search("body", "edited", options={"config": "english"}).execute()
    check([r["body"] for r in found.data] == ["py0 edited"], f"text_search returned {found.data!r}")
    phrase = mine().text_search("body", "py0 edited", options={"type": "phrase"}).execute()
    check([r["body"] for r in phrase.data] == ["py0 edited"], f"phrase text_search returned {phrase.data!r}")
    summary["alias_cast_contains_fts"] = True

    # Embedded resources: a message's reactions (one-to-many; the "+1" upserted above) and its conversation
    # (many-to-one).
    embedded = (client.table("messages").select("body,reactions(symbol),room:conversations(id)")
                .eq("id", message_id).single().execute())
    check(embedded.data == {"body": "py0 edited", "reactions": [{"symbol": "+1"}], "room": {"id": conversation}},
          f"embedding returned {embedded.data!r}")
    liked = (client.table("messages").select("body,reactions!inner(symbol)").eq("conversation_id", conversation)
             .eq("reactions.symbol", "+1").execute())
    check(liked.data == [{"body": "py0 edited", "reactions": [{"symbol": "+1"}]}], f"!inner embedding returned {liked.data!r}")
    summary["embedding"] = True

    # Function calls (POST, and GET for a read-only call).
    member = client.rpc("is_member", {"conversation": conversation}).execute()
    check(member.data is True, f"rpc is_member returned {member.data!r}")
    outsider = client.rpc("is_member", {"conversation": other}, get=True).execute()
    check(outsider.data is False, f"rpc is_member with GET returned {outsider.data!r}")
    rooms = client.rpc("member_conversations").execute()
    check(conversation in rooms.data and other not in rooms.data, f"rpc member_conversations returned {rooms.data!r}")
    try:
        client.rpc("no_such_function", {}).execute()
        fail("calling an unknown function succeeded")
    except APIError as error:
        check(error.code == "PGRST202", f"unknown function gave {error.code!r}")
    summary["rpc"] = True

    # RLS keeps alice out of a conversation she is not in.
    hidden = client.table("messages").select("*").eq("conversation_id", other).execute()
    check(hidden.data == [], f"non-member saw {hidden.data!r}")
    try:
        client.table("messages").insert({"conversation_id": other, "sender_id": "alice", "body": "intrude"}).execute()
        fail("insert into a conversation alice is not a member of succeeded")
    except APIError as error:
        check(error.code == "42501", f"intrusion failed with {error.code!r} {error.message!r}, expected 42501")
        summary["rls_insert_code"] = error.code

    # Errors come back as PostgREST APIError values.
    try:
        client.table("no_such_table").select("*").execute()
        fail("select from an unknown table succeeded")
    except APIError as error:
        check(error.code == "PGRST205", f"unknown table gave {error.code!r}")

    summary["ok"] = True
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
