#!/usr/bin/env python3
"""The connection load test (issue 30's goal): start the Supabase-like server and the XMTP-like node, hold N idle
authenticated realtime WebSockets (joined to a channel, heartbeating every 25 s) on the first, M open subscribe
streams on the second and S slowloris connections on the first, then measure a normal REST request on each (p50,
p99 over LOAD_REQUESTS), sample each server's RSS, and send one WebSocket frame header declaring a 1 GB payload,
which must be refused at once. Prints the figures; exits 1 when the goal is missed.

Environment (all optional):
  LOAD_SOCKETS (1000)     N idle realtime WebSockets on the Supabase-like server
  LOAD_STREAMS (1000)     M subscribe streams on the XMTP-like node
  LOAD_SLOWLORIS (100)    S slowloris connections on the Supabase-like server (a header byte every LOAD_SLOW_EVERY s)
  LOAD_SLOW_EVERY (5)     seconds between a slowloris connection's bytes
  LOAD_REQUESTS (200)     REST requests measured on each server while loaded, spread over LOAD_HOLD_SECONDS
  LOAD_HOLD_SECONDS (40)  how long the load is held while measuring (longer than the 25 s heartbeat)
  LOAD_OPEN_SECONDS (30)  how long the connections may take to open (those not open by then count as refused)
  LOAD_REQUEST_TIMEOUT (5) seconds before a REST request counts as unanswered
  LOAD_GOAL_P99_MS (50), LOAD_GOAL_RSS_MB (300), LOAD_GOAL_FRAME_MS (1000)
  SOAK_SWITCHBOARD        the switchboard executable (default: .build/debug/switchboard)
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import json
import multiprocessing
import os
import random
import resource
import shutil
import signal
import struct
import sys
import tempfile
import time
import uuid

sys.dont_write_bytecode = True  # no __pycache__ next to the scripts in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from backends import HTTPFailure, Supabase, XMTPNode, jwt, request  # noqa: E402
from processes import Server, free_port, switchboard_binary  # noqa: E402

STARTED = time.monotonic()


def log(text: str) -> None:
    print(f"[{time.monotonic() - STARTED:7.1f}s] {text}", flush=True)


def setting(name: str, default: float) -> float:
    text = os.environ.get(name)
    return float(text) if text else default


N = int(setting("LOAD_SOCKETS", 1000))
M = int(setting("LOAD_STREAMS", 1000))
S = int(setting("LOAD_SLOWLORIS", 100))
SLOW_EVERY = setting("LOAD_SLOW_EVERY", 5)
REQUESTS = int(setting("LOAD_REQUESTS", 200))
OPEN_SECONDS = setting("LOAD_OPEN_SECONDS", 30)
REQUEST_TIMEOUT = setting("LOAD_REQUEST_TIMEOUT", 5)
GOAL_P99_MS = setting("LOAD_GOAL_P99_MS", 50)
GOAL_RSS_MB = setting("LOAD_GOAL_RSS_MB", 300)
GOAL_FRAME_MS = setting("LOAD_GOAL_FRAME_MS", 1000)
HOLD = setting("LOAD_HOLD_SECONDS", 40)
HEARTBEAT_SECONDS = 25


def raise_file_limit(needed: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, needed)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as file:
            return " ".join(file.read().split()[:3])
    except OSError:
        return "?"


def memory(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of `pid` in MB."""
    values = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    name, amount = line.split(":", 1)
                    values[name] = int(amount.split()[0]) / 1024
    except OSError:
        pass
    return values


# MARK: WebSocket by hand (the load needs thousands of cheap sockets, and the 1 GB header a raw one)


def frame(opcode: int, payload: bytes) -> bytes:
    """A masked client frame."""
    mask = os.urandom(4)
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
    elif length < 65536:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def read_head(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """The status code and raw head of an HTTP response."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, head


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    first, second = await reader.readexactly(2)
    length = second & 0x7F
    if length == 126:
        length = struct.unpack("!H", await reader.readexactly(2))[0]
    elif length == 127:
        length = struct.unpack("!Q", await reader.readexactly(8))[0]
    return first & 0x0F, await reader.readexactly(length)


async def open_websocket(port: int, apikey: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write((f"GET /realtime/v1/websocket?apikey={apikey}&vsn=1.0.0 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                  f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                  "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    await writer.drain()
    status, _ = await read_head(reader)
    if status != 101:
        writer.close()
        raise ConnectionError(f"upgrade answered {status}")
    return reader, writer


class Load:
    """The held connections and what became of them."""

    def __init__(self):
        self.counts = {"sockets": 0, "sockets_closed": 0, "streams": 0, "streams_closed": 0,
                       "slowloris": 0, "slowloris_closed": 0}
        self.slowloris_closed_after: list[float] = []
        self.tasks: list[asyncio.Task] = []
        self.writers: list[asyncio.StreamWriter] = []
        self.errors: dict[str, int] = {}

    def error(self, kind: str, error: BaseException) -> None:
        name = f"{kind}: {error.__class__.__name__}"
        self.errors[name] = self.errors.get(name, 0) + 1

    async def socket(self, port: int, apikey: str, number: int) -> None:
        try:
            reader, writer = await open_websocket(port, apikey)
            self.writers.append(writer)
            join = {"topic": f"realtime:load-{number % 50}", "event": "phx_join", "ref": "1",
                    "payload": {"config": {"broadcast": {"self": False}, "presence": {"key": ""},
                                           "postgres_changes": []}, "access_token": apikey}}
            writer.write(frame(1, json.dumps(join).encode()))
            await writer.drain()
            while True:
                opcode, payload = await read_frame(reader)
                if opcode == 1 and b'"phx_reply"' in payload:
                    if b'"ok"' not in payload:
                        raise ConnectionError(f"join refused: {payload[:200]!r}")
                    break
                if opcode == 8:
                    raise ConnectionError("closed before the join reply")
        except (OSError, asyncio.IncompleteReadError, ValueError) as error:
            self.error("socket", error)
            return
        self.counts["sockets"] += 1
        ref = 1
        # Heartbeats every 25 s from a random phase, as clients that connected at different times would send them.
        heartbeat_at = time.monotonic() + random.uniform(0, HEARTBEAT_SECONDS)
        try:
            while True:
                timeout = heartbeat_at - time.monotonic()
                try:
                    opcode, _ = await asyncio.wait_for(read_frame(reader), max(0.01, timeout))
                    if opcode == 8:
                        break
                except asyncio.TimeoutError:
                    ref += 1
                    writer.write(frame(1, json.dumps({"topic": "phoenix", "event": "heartbeat", "payload": {},
                                                      "ref": str(ref)}).encode()))
                    await writer.drain()
                    heartbeat_at = time.monotonic() + HEARTBEAT_SECONDS
        except (OSError, asyncio.IncompleteReadError):
            pass
        self.counts["sockets_closed"] += 1

    async def stream(self, port: int, token: str, group: bytes) -> None:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            self.writers.append(writer)
            body = json.dumps({"filters": [{"group_id": base64.b64encode(group).decode(), "id_cursor": "0"}]}).encode()
            writer.write((f"POST /mls/v1/subscribe-group-messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                          f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
                          f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
            await writer.drain()
            status, _ = await read_head(reader)
            if status != 200:
                raise ConnectionError(f"subscribe answered {status}")
        except (OSError, asyncio.IncompleteReadError, ValueError) as error:
            self.error("stream", error)
            return
        self.counts["streams"] += 1
        try:
            while await reader.read(4096):
                pass
        except OSError:
            pass
        self.counts["streams_closed"] += 1

    async def slowloris(self, port: int) -> None:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            self.writers.append(writer)
            writer.write(f"GET /rest/v1/messages?limit=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
            await writer.drain()
        except OSError as error:
            self.error("slowloris", error)
            return
        self.counts["slowloris"] += 1
        opened = time.monotonic()
        try:
            while True:
                try:
                    data = await asyncio.wait_for(reader.read(4096), SLOW_EVERY)
                    if not data:
                        break
                except asyncio.TimeoutError:
                    writer.write(b"a")
                    await writer.drain()
        except OSError:
            pass
        self.counts["slowloris_closed"] += 1
        self.slowloris_closed_after.append(time.monotonic() - opened)

    def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        for writer in self.writers:
            writer.close()


def timed_requests(request_spec: tuple, count: int, over: float) -> list:
    """In a process of its own (so the load's event loop cannot delay it): `count` sequential requests, spread
    evenly over `over` seconds; each latency in ms, or None when unanswered (no answer within the timeout, or a
    5xx). After 5 unanswered in a row it stops: the server is stalled, and waiting longer measures nothing new."""
    port, method, path, body, headers = request_spec
    latencies: list = []
    start, in_a_row = time.monotonic(), 0
    for index in range(count):
        time.sleep(max(0.0, start + over * index / count - time.monotonic()))
        began = time.perf_counter()
        try:
            status, answer = request(port, method, path, body, headers, REQUEST_TIMEOUT)
        except HTTPFailure:
            status, answer = None, b""
        if status is not None and status < 500 and status != 200:
            raise RuntimeError(f"the measured request was refused: HTTP {status}: {answer[:300]!r}")
        if status == 200:
            latencies.append((time.perf_counter() - began) * 1000)
            in_a_row = 0
        else:
            latencies.append(None)
            in_a_row += 1
            if in_a_row >= 5:
                break
    return latencies


async def measure(pool, name: str, count: int, request_spec: tuple, over: float = 0) -> dict:
    """p50 and p99 of `timed_requests` run in `pool`; an unanswered (or untried) request counts as infinitely slow."""
    results = await asyncio.get_running_loop().run_in_executor(pool, timed_requests, request_spec, count, over)
    latencies = [value for value in results if value is not None]
    answered = len(latencies)
    ordered = sorted(latencies) + [float("inf")] * (count - answered)
    return {"name": name, "answered": answered, "unanswered": len(results) - answered, "asked": count,
            "p50": ordered[(count - 1) // 2], "p99": ordered[min(count - 1, int(count * 0.99))]}


def describe(result: dict) -> str:
    def ms(value: float) -> str:
        return f"> {REQUEST_TIMEOUT * 1000:.0f} ms (unanswered)" if value == float("inf") else f"{value:.1f} ms"
    skipped = result["asked"] - result["answered"] - result["unanswered"]
    return (f"{result['name']}: p50 {ms(result['p50'])}, p99 {ms(result['p99'])} ({result['answered']} answered, "
            f"{result['unanswered']} unanswered" + (f", {skipped} not tried after 5 unanswered in a row" if skipped else "")
            + f", of {result['asked']})")


async def huge_frame(port: int, apikey: str) -> str | float:
    """Sends a frame header declaring 1 GB after an upgrade; the ms until the server closes, or why not."""
    try:
        reader, writer = await asyncio.wait_for(open_websocket(port, apikey), REQUEST_TIMEOUT)
    except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, ValueError) as error:
        return f"the upgrade was not answered ({error.__class__.__name__})"
    try:
        header = struct.pack("!BBQ", 0x82, 0x80 | 127, 1 << 30) + os.urandom(4)
        writer.write(header + b"\0" * 1024)
        await writer.drain()
        began = time.perf_counter()
        try:
            while True:
                data = await asyncio.wait_for(reader.read(65536), GOAL_FRAME_MS / 1000 * 5)
                if not data:
                    break
        except asyncio.TimeoutError:
            return f"still open {GOAL_FRAME_MS * 5 / 1000:.0f} s after the header"
        except OSError:
            pass
        return (time.perf_counter() - began) * 1000
    finally:
        writer.close()


async def main() -> int:
    limit = raise_file_limit(N + M + S + 1024)
    binary = switchboard_binary()
    work = tempfile.mkdtemp(prefix="switchboard-connload-")
    os.chmod(work, 0o755)
    secret = uuid.uuid4().hex + uuid.uuid4().hex
    supabase_port, xmtp_port = free_port(), free_port()
    supabase_server = Server("supabase", [binary, "serve", "supabase", "--data-dir", os.path.join(work, "supabase"),
                                          "--port", str(supabase_port)], os.path.join(work, "supabase.log"),
                             dict(os.environ, SWITCHBOARD_JWT_SECRET=secret))
    xmtp_server = Server("xmtp", [binary, "serve", "xmtp", "--data-dir", os.path.join(work, "xmtp"), "--port",
                                  str(xmtp_port)], os.path.join(work, "xmtp.log"))
    load = Load()
    failed = True
    try:
        load_before = loadavg()
        log(f"connection load: N={N} sockets, M={M} streams, S={S} slowloris; descriptor limit {limit}; "
            f"machine load average {load_before}")
        await asyncio.to_thread(supabase_server.start_ready)
        await asyncio.to_thread(xmtp_server.start_ready)
        supabase, node = Supabase(supabase_port, secret), XMTPNode(xmtp_port)
        token = node.register("load")
        group = os.urandom(16)
        node.create_group(token, group, [])
        rest_path = "/rest/v1/messages?select=id&limit=1"
        # A signed-in user reading messages (the anon role may not read the table): RLS answers with their rows.
        rest_headers = supabase.headers(jwt(secret, "authenticated", "load-user"))
        query = json.dumps({"group_id": base64.b64encode(group).decode(),
                            "paging_info": {"direction": "DIRECTION_DESCENDING", "limit": 1}}).encode()
        query_headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

        supabase_rest = (supabase_port, "GET", rest_path, None, rest_headers)
        xmtp_rest = (xmtp_port, "POST", "/mls/v1/query-group-messages", query, query_headers)
        pool = concurrent.futures.ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn"))

        idle = [await measure(pool, "supabase-like REST, idle", 50, supabase_rest),
                await measure(pool, "xmtp-like query, idle", 50, xmtp_rest)]
        for result in idle:
            log(describe(result))
        idle_frame = await huge_frame(supabase_port, supabase.anon)
        log(f"1 GB frame header, idle server: " + (f"closed after {idle_frame:.0f} ms" if isinstance(idle_frame, float)
                                                   else idle_frame))
        baseline = {"supabase": memory(supabase_server.process.pid), "xmtp": memory(xmtp_server.process.pid)}

        began = time.monotonic()
        load.tasks = ([asyncio.create_task(load.socket(supabase_port, supabase.anon, i)) for i in range(N)]
                      + [asyncio.create_task(load.stream(xmtp_port, token, group)) for _ in range(M)]
                      + [asyncio.create_task(load.slowloris(supabase_port)) for _ in range(S)])
        deadline = began + OPEN_SECONDS
        while time.monotonic() < deadline:
            if load.counts["sockets"] >= N and load.counts["streams"] >= M and load.counts["slowloris"] >= S:
                break
            await asyncio.sleep(0.2)
        log(f"open after {time.monotonic() - began:.1f} s: {load.counts['sockets']}/{N} sockets joined, "
            f"{load.counts['streams']}/{M} streams, {load.counts['slowloris']}/{S} slowloris"
            + (f"; errors {load.errors}" if load.errors else ""))

        peak = {"supabase": 0.0, "xmtp": 0.0}

        async def sample() -> None:
            while True:
                for name, server in (("supabase", supabase_server), ("xmtp", xmtp_server)):
                    peak[name] = max(peak[name], memory(server.process.pid).get("VmRSS", 0))
                await asyncio.sleep(0.5)

        sampler = asyncio.create_task(sample())
        # Measured while the load is held for HOLD seconds (every socket heartbeats, every slowloris connection
        # trickles), both servers at once.
        loaded = list(await asyncio.gather(measure(pool, "supabase-like REST, loaded", REQUESTS, supabase_rest, HOLD),
                                           measure(pool, "xmtp-like query, loaded", REQUESTS, xmtp_rest, HOLD)))
        for result in loaded:
            log(describe(result))
        loaded_frame = await huge_frame(supabase_port, supabase.anon)
        log(f"1 GB frame header, loaded server: " + (f"closed after {loaded_frame:.0f} ms"
                                                     if isinstance(loaded_frame, float) else loaded_frame))
        await asyncio.sleep(1)
        sampler.cancel()
        final = {"supabase": memory(supabase_server.process.pid), "xmtp": memory(xmtp_server.process.pid)}

        print("\nconnection load figures")
        print(f"  held for {HOLD:.0f} s: {load.counts['sockets']}/{N} realtime sockets joined ({load.counts['sockets_closed']} closed "
              f"since), {load.counts['streams']}/{M} subscribe streams ({load.counts['streams_closed']} closed since), "
              f"{load.counts['slowloris']}/{S} slowloris ({load.counts['slowloris_closed']} closed by the server"
              + (f", after {min(load.slowloris_closed_after):.0f}–{max(load.slowloris_closed_after):.0f} s"
                 if load.slowloris_closed_after else "") + ")")
        for result in idle + loaded:
            print("  " + describe(result))
        for name in ("supabase", "xmtp"):
            print(f"  {name} RSS: idle {baseline[name].get('VmRSS', 0):.0f} MB, loaded peak {peak[name]:.0f} MB, "
                  f"high-water {final[name].get('VmHWM', 0):.0f} MB")
        print("  1 GB frame header: idle " + (f"closed after {idle_frame:.0f} ms" if isinstance(idle_frame, float)
                                              else idle_frame)
              + "; loaded " + (f"closed after {loaded_frame:.0f} ms" if isinstance(loaded_frame, float)
                               else loaded_frame))
        misses = []
        if load.counts["sockets"] < N or load.counts["streams"] < M or load.counts["slowloris"] < S:
            misses.append("not every connection could be opened")
        for result in loaded:
            if result["p99"] >= GOAL_P99_MS:
                misses.append(f"{result['name']} p99 ≥ {GOAL_P99_MS:.0f} ms")
        for name in ("supabase", "xmtp"):
            if max(peak[name], final[name].get("VmHWM", 0)) >= GOAL_RSS_MB:
                misses.append(f"{name} RSS ≥ {GOAL_RSS_MB:.0f} MB")
        if not (isinstance(loaded_frame, float) and loaded_frame < GOAL_FRAME_MS):
            misses.append(f"1 GB frame not refused within {GOAL_FRAME_MS:.0f} ms")
        print(f"  time: {time.monotonic() - STARTED:.1f} s; machine load average (1, 5, 15 min) {load_before} before, "
              f"{loadavg()} after, on {os.cpu_count()} CPUs (other work on the machine shows in the latencies)")
        if misses:
            print("GOAL MISSED: " + "; ".join(misses))
        else:
            print(f"GOAL MET: REST p99 < {GOAL_P99_MS:.0f} ms on both servers, RSS < {GOAL_RSS_MB:.0f} MB, "
                  f"1 GB frame refused within {GOAL_FRAME_MS:.0f} ms")
        failed = bool(misses)
        return 1 if misses else 0
    finally:
        load.close()
        await asyncio.sleep(0.5)  # lets the loop actually close the sockets before the servers are stopped
        for server in (supabase_server, xmtp_server):
            await asyncio.to_thread(server.kill, signal.SIGTERM)
        if failed:
            print(f"(server logs kept in {work})")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(asyncio.run(main()))
