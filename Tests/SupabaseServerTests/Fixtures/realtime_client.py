"""Drives the switchboard realtime endpoint with the OFFICIAL `realtime` client (AsyncRealtimeClient).

Usage:
  realtime_client.py changes <ws-url> <token> <conversation-id> <ready-file>
      Subscribes to postgres_changes on public.messages filtered by conversation, touches <ready-file> once
      SUBSCRIBED, then prints one JSON line per change and exits after an INSERT, an UPDATE and a DELETE.
  realtime_client.py broadcast_presence <ws-url> <token>
      Two clients on one channel: presence sync/join events, a broadcast from one to the other over the socket
      and one through the REST broadcast API (http_send).
Exit status 0 on success; failures print a reason to stderr.
"""

import asyncio
import json
import pathlib
import sys

from realtime import AsyncRealtimeClient, RealtimeSubscribeStates


async def subscribed(channel):
    """Subscribes and waits for SUBSCRIBED (raises on any other state)."""
    done = asyncio.get_running_loop().create_future()

    def on_state(state, error):
        if done.done():
            return
        if state == RealtimeSubscribeStates.SUBSCRIBED:
            done.set_result(None)
        else:
            done.set_exception(RuntimeError(f"subscribe ended in {state}: {error}"))

    await channel.subscribe(on_state)
    await asyncio.wait_for(done, 10)


async def changes(url, token, conversation_id, ready_file):
    client = AsyncRealtimeClient(url, token, auto_reconnect=False)
    await client.connect()
    events = []
    finished = asyncio.Event()

    def on_change(payload):
        data = payload["data"]
        events.append(data)
        print(json.dumps({"type": data["type"], "record": data.get("record"), "old_record": data.get("old_record"),
                          "columns": data["columns"], "commit_timestamp": data["commit_timestamp"],
                          "table": data["table"], "schema": data["schema"]}), flush=True)
        if {e["type"] for e in events} >= {"INSERT", "UPDATE", "DELETE"}:
            finished.set()

    channel = client.channel(f"messages:{conversation_id}")
    channel.on_postgres_changes("*", on_change, table="messages", schema="public",
                                filter=f"conversation_id=eq.{conversation_id}")
    await subscribed(channel)
    pathlib.Path(ready_file).write_text("ready")
    await asyncio.wait_for(finished.wait(), 30)
    await client.close()


async def broadcast_presence(url, token):
    alice = AsyncRealtimeClient(url, token, auto_reconnect=False)
    bob = AsyncRealtimeClient(url, token, auto_reconnect=False)
    await alice.connect()
    await bob.connect()

    received = asyncio.get_running_loop().create_future()
    bob_joined = asyncio.Event()
    bob_synced = asyncio.Event()
    joins = []

    a_channel = alice.channel("room:fixture", {"config": {"broadcast": {"self": False, "ack": True},
                                                          "presence": {"key": "alice", "enabled": True}}})
    b_channel = bob.channel("room:fixture", {"config": {"broadcast": {"self": False},
                                                        "presence": {"key": "bob", "enabled": True}}})

    def on_broadcast(payload):
        if not received.done():
            received.set_result(payload)

    def on_join(key, current, new):
        joins.append(key)
        bob_joined.set()

    b_channel.on_broadcast("typing", on_broadcast)
    b_channel.on_presence_sync(lambda: bob_synced.set())
    b_channel.on_presence_join(on_join)
    a_channel.on_presence_sync(lambda: None)

    await subscribed(a_channel)
    await subscribed(b_channel)
    await a_channel.track({"status": "online"})
    await asyncio.wait_for(bob_joined.wait(), 10)
    await asyncio.wait_for(bob_synced.wait(), 10)
    state = b_channel.presence_state()
    if "alice" not in state or state["alice"][0].get("status") != "online":
        raise RuntimeError(f"unexpected presence state {state}")

    await a_channel.send_broadcast("typing", {"who": "alice"})
    payload = await asyncio.wait_for(received, 10)
    if payload.get("event") != "typing" or payload.get("payload", {}).get("who") != "alice":
        raise RuntimeError(f"unexpected broadcast {payload}")

    # The same event through the REST broadcast API (http_send), which needs no joined socket.
    from_rest = asyncio.get_running_loop().create_future()
    b_channel.on_broadcast("shout", lambda p: from_rest.done() or from_rest.set_result(p))
    await a_channel.http_send("shout", {"who": "rest"})
    rest_payload = await asyncio.wait_for(from_rest, 10)
    if rest_payload.get("payload", {}).get("who") != "rest":
        raise RuntimeError(f"unexpected REST broadcast {rest_payload}")
    print(json.dumps({"presence": sorted(state.keys()), "joins": joins, "broadcast": payload["payload"],
                      "rest_broadcast": rest_payload["payload"]}), flush=True)
    await alice.close()
    await bob.close()


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "changes":
        asyncio.run(changes(*args))
    elif command == "broadcast_presence":
        asyncio.run(broadcast_presence(*args))
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main()
