#!/usr/bin/env python3
"""A fault-injecting TCP proxy for the chaos soak (standard library only).

It listens on a port and forwards each connection to a target. On demand (or on a seeded random schedule when
run as a program) it injects one of four faults into a live connection:

- ``delay``: both directions stop moving for a while (the bytes wait in the proxy), then resume;
- ``drop``: both sides are closed cleanly (each sees end of stream);
- ``reset``: both sides are aborted with a TCP RST (``SO_LINGER`` 0);
- ``halfopen``: one direction stops being forwarded (the bytes are read and discarded, as if the peer had
  vanished) while the sockets stay open; after ``half_open_hold`` seconds the proxy resets the connection, as a
  NAT or keepalive would. Which side closed it first, if any, is counted (a client that noticed, or was done with
  the connection; a server that gave up on it).

Run ``faultproxy.py --listen 127.0.0.1:0 --target 127.0.0.1:5556 --seed 7 --every 2`` to proxy with random
faults; it prints ``listening on 127.0.0.1:PORT`` and a line per fault. ``soak.py`` imports it instead.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import random
import socket
import struct
import sys
import time

FAULTS = ("delay", "drop", "reset", "halfopen")
CHUNK = 65536


class Link:
    """One proxied connection: a client socket and its upstream socket, with two pumps."""

    def __init__(self, proxy: "FaultProxy", number: int, client: tuple, upstream: tuple):
        self.proxy = proxy
        self.number = number
        self.client_reader, self.client_writer = client
        self.upstream_reader, self.upstream_writer = upstream
        self.resumed = asyncio.Event()
        self.resumed.set()
        # Directions whose bytes are discarded: "up" (client to target) and/or "down" (target to client).
        self.blackholed: set[str] = set()
        self.closed = False
        self.half_open_since: float | None = None
        self.fault: str | None = None
        self.tasks: list[asyncio.Task] = []
        self.opened = time.monotonic()

    def start(self) -> None:
        self.tasks = [asyncio.create_task(self._pump(self.client_reader, self.upstream_writer, "up")),
                      asyncio.create_task(self._pump(self.upstream_reader, self.client_writer, "down"))]

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, direction: str) -> None:
        ended_by = "error"
        try:
            while True:
                await self.resumed.wait()
                data = await reader.read(CHUNK)
                if not data:
                    ended_by = "eof"
                    break
                await self.resumed.wait()
                if direction in self.blackholed:
                    continue
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            return
        # One side went away by itself: pass the end on. A client leaving a half-open connection is a detection.
        if self.half_open_since is not None and not self.closed:
            who = "client" if direction == "up" else "server"
            self.proxy.counts[f"halfopen_{who}_closed"] += 1
            self.proxy.note(f"connection {self.number}: the {who} closed the half-open connection after "
                            f"{time.monotonic() - self.half_open_since:.1f} s")
            self.half_open_since = None  # counted once, whichever side ends next
        if ended_by == "eof" and direction not in self.blackholed and not self.closed:
            try:
                writer.write_eof()
                await writer.drain()
            except (ConnectionError, OSError, RuntimeError):
                pass
            # Half-close is allowed, but when both directions ended the link is done.
            if all(task.done() or task is asyncio.current_task() for task in self.tasks):
                self.close(reset=False)
            return
        self.close(reset=False)

    def close(self, reset: bool) -> None:
        """Closes both sockets, with a RST when `reset`."""
        if self.closed:
            return
        self.closed = True
        self.resumed.set()
        for writer in (self.client_writer, self.upstream_writer):
            sock = writer.get_extra_info("socket")
            if reset and sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
            try:
                if reset:
                    writer.transport.abort()
                else:
                    writer.close()
            except (OSError, RuntimeError):
                pass
        for task in self.tasks:
            if task is not asyncio.current_task():
                task.cancel()
        self.proxy.links.discard(self)


class FaultProxy:
    """Listens on `listen_port` (0: any free port) and forwards to `target`; `inject` applies a fault."""

    def __init__(self, target_host: str, target_port: int, name: str = "proxy", listen_host: str = "127.0.0.1",
                 listen_port: int = 0, half_open_hold: float = 30.0, log=None):
        self.target = (target_host, target_port)
        self.name = name
        self.listen = (listen_host, listen_port)
        self.half_open_hold = half_open_hold
        self.links: set[Link] = set()
        self.counts: collections.Counter = collections.Counter()
        self.server: asyncio.base_events.Server | None = None
        self.port = 0
        self._numbers = 0
        self._log = log
        self._timers: set[asyncio.Task] = set()

    def note(self, text: str) -> None:
        if self._log:
            self._log(f"{self.name}: {text}")

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._accept, self.listen[0], self.listen[1], reuse_address=True)
        self.port = self.server.sockets[0].getsockname()[1]
        return self.port

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self._numbers += 1
        number = self._numbers
        try:
            upstream = await asyncio.wait_for(asyncio.open_connection(*self.target), timeout=10)
        except (OSError, asyncio.TimeoutError):
            # The target is down (a server restart): the client sees a reset, as it would connecting directly.
            self.counts["refused"] += 1
            sock = client_writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client_writer.transport.abort()
            return
        self.counts["connections"] += 1
        link = Link(self, number, (client_reader, client_writer), upstream)
        self.links.add(link)
        link.start()

    def live_links(self) -> list[Link]:
        """Connections that are open and carry no fault now, oldest first."""
        return sorted((link for link in self.links if not link.closed and link.fault is None), key=lambda l: l.number)

    async def inject(self, kind: str, rng: random.Random, seconds: float | None = None,
                     direction: str | None = None) -> str | None:
        """Applies fault `kind` to a random live connection; returns what was done, or None when none is open.

        `seconds` sets a delay's pause or a half-open connection's hold (random / `half_open_hold` otherwise);
        `direction` ("up": client to target, "down") picks the half-open direction (random otherwise)."""
        candidates = self.live_links()
        if not candidates:
            return None
        if kind == "halfopen":
            # Aimed at long-lived connections (realtime sockets, subscribe streams, pooled keep-alive connections:
            # open for 5 s or more), whose clients must notice a silent peer; a short request would just end.
            now = time.monotonic()
            candidates = [link for link in candidates if now - link.opened >= 5] or candidates
        link = rng.choice(candidates)
        self.counts[kind] += 1
        if kind == "delay":
            pause = seconds if seconds is not None else rng.uniform(0.2, 3.0)
            link.fault = "delay"
            link.resumed.clear()
            self._later(pause, self._resume, link)
            return f"delay {pause:.1f} s on connection {link.number}"
        if kind == "drop":
            link.close(reset=False)
            return f"drop connection {link.number}"
        if kind == "reset":
            link.close(reset=True)
            return f"reset connection {link.number}"
        if kind == "halfopen":
            direction = direction or rng.choice(("up", "down"))
            link.fault = "halfopen"
            link.blackholed.add(direction)
            link.half_open_since = time.monotonic()
            hold = seconds if seconds is not None else self.half_open_hold
            self._later(hold, self._expire_half_open, link)
            return f"half-open ({direction} stops) on connection {link.number} for up to {hold:.0f} s"
        raise ValueError(f"unknown fault {kind!r}")

    def _later(self, seconds: float, action, link: Link) -> None:
        async def run():
            await asyncio.sleep(seconds)
            action(link)
        task = asyncio.create_task(run())
        self._timers.add(task)
        task.add_done_callback(self._timers.discard)

    @staticmethod
    def _resume(link: Link) -> None:
        link.fault = None
        link.resumed.set()

    def _expire_half_open(self, link: Link) -> None:
        if link.closed:
            return
        if link.half_open_since is not None:  # else one side ended it already (counted); the rest goes now
            self.counts["halfopen_expired"] += 1
            self.note(f"connection {link.number}: half-open for {time.monotonic() - link.half_open_since:.0f} s "
                      "without either side closing it; resetting it")
        link.close(reset=True)

    def release_all(self) -> None:
        """Ends every fault in progress: delays resume, half-open connections are reset."""
        for link in list(self.links):
            if link.fault == "delay":
                self._resume(link)
            elif link.fault == "halfopen":
                link.close(reset=True)

    async def close(self) -> None:
        """Stops listening and closes every connection."""
        if self.server is not None:
            self.server.close()
        for task in list(self._timers):
            task.cancel()
        for link in list(self.links):
            link.close(reset=False)
        if self.server is not None:
            try:
                await asyncio.wait_for(self.server.wait_closed(), timeout=2)
            except asyncio.TimeoutError:
                pass


def parse_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT to listen on (port 0: any free port)")
    parser.add_argument("--target", required=True, help="HOST:PORT to forward to")
    parser.add_argument("--seed", type=int, default=None, help="random seed (printed when not given)")
    parser.add_argument("--every", type=float, default=0, help="mean seconds between faults (0: no faults)")
    parser.add_argument("--faults", default=",".join(FAULTS), help="comma-separated kinds to inject")
    parser.add_argument("--half-open-hold", type=float, default=30.0, help="seconds before a half-open link is reset")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    rng = random.Random(seed)
    kinds = [kind for kind in args.faults.split(",") if kind]
    for kind in kinds:
        if kind not in FAULTS:
            parser.error(f"unknown fault {kind!r} (known: {', '.join(FAULTS)})")

    def log(text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {text}", flush=True)

    listen_host, listen_port = parse_address(args.listen)
    target_host, target_port = parse_address(args.target)
    proxy = FaultProxy(target_host, target_port, listen_host=listen_host, listen_port=listen_port,
                       half_open_hold=args.half_open_hold, log=log)
    port = await proxy.start()
    print(f"listening on {listen_host}:{port} (target {target_host}:{target_port}, seed {seed})", flush=True)
    try:
        while True:
            if args.every <= 0:
                await asyncio.sleep(3600)
                continue
            await asyncio.sleep(rng.expovariate(1 / args.every))
            done = await proxy.inject(rng.choice(kinds), rng)
            if done:
                log(done)
    finally:
        await proxy.close()
        print(f"faults: {dict(proxy.counts)}", flush=True)


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except KeyboardInterrupt:
        sys.exit(0)
