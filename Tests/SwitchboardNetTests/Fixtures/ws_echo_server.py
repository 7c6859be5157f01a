#!/usr/bin/env python3
"""WebSocket echo server for the SwitchboardNet interop tests: the real `websockets` package as the peer.

Binds 127.0.0.1 on a free port and prints `listening on ws://127.0.0.1:PORT` (wss:// with --certfile).
For every connection it:
  - echoes text and binary messages (`frag:<text>` comes back as the text in three fragments);
  - on text `close:<code>:<reason>`, closes with that code and reason;
  - on text `ping-me`, pings the client, waits for its pong, then sends text `pong-received`;
  - on text `request`, sends a JSON object with the upgrade request's path and headers;
and when the connection is over prints `closed code=<code> reason=<reason>`, the close frame the client sent
(1006 when there was none). Exits when stdin reaches end of file or on SIGTERM.
"""
import argparse
import asyncio
import json
import os
import signal
import ssl

from websockets.asyncio.server import serve


async def handler(ws):
    try:
        async for message in ws:
            if isinstance(message, str) and message.startswith("close:"):
                _, code, reason = message.split(":", 2)
                await ws.close(int(code), reason)
                break
            if message == "ping-me":
                pong = await ws.ping(b"from-python")
                await asyncio.wait_for(pong, 5)
                await ws.send("pong-received")
                continue
            if isinstance(message, str) and message.startswith("frag:"):
                text = message[len("frag:"):]
                third = max(1, len(text) // 3)
                await ws.send([text[:third], text[third:2 * third], text[2 * third:]])
                continue
            if message == "request":
                headers = {name: value for name, value in ws.request.headers.raw_items()}
                await ws.send(json.dumps({"path": ws.request.path, "headers": headers}))
                continue
            await ws.send(message)
    except Exception:
        pass
    finally:
        await ws.wait_closed()
        code = ws.close_code if ws.close_code is not None else 1006
        print(f"closed code={code} reason={ws.close_reason or ''}", flush=True)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--certfile")
    parser.add_argument("--keyfile")
    args = parser.parse_args()
    context = None
    if args.certfile:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.certfile, args.keyfile)

    loop = asyncio.get_running_loop()
    stop = loop.create_future()

    def finish():
        if not stop.done():
            stop.set_result(None)

    def stdin_readable():
        if not os.read(0, 4096):
            loop.remove_reader(0)
            finish()

    loop.add_signal_handler(signal.SIGTERM, finish)
    loop.add_reader(0, stdin_readable)
    async with serve(handler, "127.0.0.1", 0, ssl=context) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"listening on {'wss' if context else 'ws'}://127.0.0.1:{port}", flush=True)
        await stop


if __name__ == "__main__":
    asyncio.run(main())
