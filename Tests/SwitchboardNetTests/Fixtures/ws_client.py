#!/usr/bin/env python3
"""Drives a SwitchboardNet WebSocket server with the real `websockets` client.

usage: ws_client.py URL SCENARIO
Prints one JSON object (the observations) on stdout and exits 0; on failure prints the error on stderr, exits 1.

scenarios:
  echo          text, binary and a fragmented text message echoed; a ping answered; then the client closes
                with 4001 "client done" and reports the close frame the server answered with.
  server-close  sends `close-me`; the server is expected to close with its own code and reason, reported here.
"""
import asyncio
import json
import sys

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed


async def echo(url):
    async with connect(url, additional_headers={"X-Interop": "python"}) as ws:
        await ws.send("hello from python")
        text = await asyncio.wait_for(ws.recv(), 5)
        await ws.send(b"\x00\x01\xfe\xff")
        binary = await asyncio.wait_for(ws.recv(), 5)
        await ws.send(["fragment one, ", "fragment two"])
        fragmented = await asyncio.wait_for(ws.recv(), 5)
        pong = await ws.ping(b"python-ping")
        await asyncio.wait_for(pong, 5)
        await ws.close(4001, "client done")
        return {
            "text": text,
            "binary": binary.hex(),
            "fragmented": fragmented,
            "pong": True,
            "close_code": ws.close_code,
            "close_reason": ws.close_reason,
        }


async def server_close(url):
    async with connect(url) as ws:
        await ws.send("close-me")
        try:
            extra = await asyncio.wait_for(ws.recv(), 5)
        except ConnectionClosed:
            extra = None
        await ws.wait_closed()
        return {"unexpected": extra, "close_code": ws.close_code, "close_reason": ws.close_reason}


async def main():
    url, scenario = sys.argv[1], sys.argv[2]
    runs = {"echo": echo, "server-close": server_close}
    result = await asyncio.wait_for(runs[scenario](url), 20)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
