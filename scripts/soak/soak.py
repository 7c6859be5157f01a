#!/usr/bin/env python3
"""The chaos soak: both reference servers and the bridge over many pairs, while the bridge is SIGKILLed and
restarted, each server restarts (PostgreSQL under the Supabase-like server included) and a fault-injecting proxy
between the bridge and each server delays, drops, resets and half-opens its connections. Traffic goes straight to
both backends; at the end the soak waits until every message has crossed and counts each pair's messages on both
backends: none lost, none doubled, or it exits 1.

Environment (all optional):
  SOAK_SECONDS (300)       how long traffic and chaos last
  SOAK_PAIRS (8)           conversation pairs the bridge relays
  SOAK_RATE (12)           messages per second sent, over all pairs and both sides
  SOAK_SEED (random)       the seed of every random choice (printed, to reproduce a run)
  SOAK_CHAOS_EVERY         mean seconds between chaos events (default: SOAK_SECONDS / 16, at most 5); the first
                           eight events are each kind once, in a random order
  SOAK_HALF_OPEN_SECONDS (30)  how long a half-open connection stays before the proxy resets it
  SOAK_SETTLE_SECONDS (300)    how long to wait for the last messages to cross
  SOAK_KEEP=1              keep the work folder (logs, databases) afterwards
  SOAK_SWITCHBOARD         the switchboard executable (default: .build/debug/switchboard)
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

sys.dont_write_bytecode = True  # no __pycache__ next to the scripts in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from backends import HTTPFailure, Supabase, XMTPNode, open_envelope, seal, text_content  # noqa: E402
from faultproxy import FAULTS, FaultProxy  # noqa: E402
from processes import Child, Postgres, Server, free_port, switchboard_binary  # noqa: E402

PROCESS_EVENTS = ("bridge_kill", "xmtp_restart", "supabase_restart", "postgres_restart")
STARTED = time.monotonic()


def log(text: str) -> None:
    print(f"[{time.monotonic() - STARTED:7.1f}s] {text}", flush=True)


def env_number(name: str, default: float) -> float:
    text = os.environ.get(name)
    return float(text) if text else default


class Pair:
    """One conversation pair: an XMTP-like group (dave and the bridge) and a Supabase-like conversation (alice
    and the bridge), with what was sent on each side and what each backend holds."""

    def __init__(self, index: int, group: bytes, secret: bytes, conversation: str, dave_token: str,
                 alice: str, alice_token: str):
        self.index = index
        self.name = f"soak-{index}"
        self.group = group
        self.secret = secret
        self.conversation = conversation
        self.dave_token = dave_token
        self.alice = alice
        self.alice_token = alice_token
        self.sent = {"xmtp": {}, "supabase": {}}  # text -> key, acknowledged sends only
        self.supabase_rows: dict[str, str] = {}  # row id -> body
        self.supabase_version = 0
        self.xmtp_messages: dict[tuple[str, bytes], tuple[str | None, str]] = {}  # (key, content) -> (text, key)
        self.xmtp_envelopes = 0
        self.xmtp_unreadable = 0
        self.xmtp_cursor = 0

    def expected(self) -> set[str]:
        return set(self.sent["xmtp"]) | set(self.sent["supabase"])

    def key_of(self, text: str) -> str | None:
        return self.sent["xmtp"].get(text) or self.sent["supabase"].get(text)


class Soak:
    def __init__(self):
        self.seconds = env_number("SOAK_SECONDS", 300)
        self.pair_count = int(env_number("SOAK_PAIRS", 8))
        self.rate = env_number("SOAK_RATE", 12)
        self.seed = int(os.environ.get("SOAK_SEED") or random.randrange(1 << 32))
        # Traffic and chaos draw from separate generators, so one's timing does not change the other's plan.
        self.rng = random.Random(self.seed)
        self.chaos_rng = random.Random(self.seed + 1)
        kinds = len(FAULTS) + len(PROCESS_EVENTS)
        self.chaos_every = env_number("SOAK_CHAOS_EVERY", min(5.0, max(0.5, self.seconds / (2 * kinds))))
        self.half_open = env_number("SOAK_HALF_OPEN_SECONDS", 30)
        self.settle_seconds = env_number("SOAK_SETTLE_SECONDS", 300)
        self.keep = os.environ.get("SOAK_KEEP") == "1"
        self.binary = switchboard_binary()
        self.work = tempfile.mkdtemp(prefix="switchboard-soak-")
        os.chmod(self.work, 0o755)  # the postgres user enters it to reach its data directory
        self.secret = uuid.uuid4().hex + uuid.uuid4().hex
        self.events: collections.Counter = collections.Counter()
        self.pairs: list[Pair] = []
        self.senders = concurrent.futures.ThreadPoolExecutor(max_workers=6, thread_name_prefix="sender")
        self.readers = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="reader")
        self.send_retries = 0
        self.chaos_done = False

    # MARK: Setup

    def start_backends(self) -> None:
        self.postgres = Postgres(os.path.join(self.work, "postgres"))
        os.makedirs(self.postgres.directory)
        self.postgres.init()
        log(f"postgresql on port {self.postgres.port}")
        self.supabase_port, self.xmtp_port = free_port(), free_port()
        env = dict(os.environ, SWITCHBOARD_JWT_SECRET=self.secret)
        self.supabase_server = Server("supabase", [self.binary, "serve", "supabase", "--data-dir",
                                                   os.path.join(self.work, "supabase"), "--port", str(self.supabase_port),
                                                   "--database-url", self.postgres.url],
                                      os.path.join(self.work, "supabase.log"), env)
        self.xmtp_server = Server("xmtp", [self.binary, "serve", "xmtp", "--data-dir", os.path.join(self.work, "xmtp"),
                                           "--port", str(self.xmtp_port)], os.path.join(self.work, "xmtp.log"))
        self.supabase_server.start_ready()
        self.xmtp_server.start_ready()
        log(f"supabase-like server on port {self.supabase_port}, xmtp-like node on port {self.xmtp_port}")
        self.supabase = Supabase(self.supabase_port, self.secret)
        self.node = XMTPNode(self.xmtp_port)

    def make_pairs(self) -> None:
        bridge_token = self.node.register("bridge")
        self.bridge_xmtp_token = bridge_token
        dave_token = self.node.register("dave")
        for index in range(self.pair_count):
            group, secret = os.urandom(16), os.urandom(32)
            self.node.create_group(dave_token, group, ["bridge"])
            alice = f"alice-{index}"
            conversation = self.supabase.create_conversation(f"soak {index}", [alice, "bridge"])
            self.pairs.append(Pair(index, group, secret, conversation, dave_token, alice,
                                   self.supabase_jwt("authenticated", alice)))
        log(f"{self.pair_count} pairs set up")

    def supabase_jwt(self, role: str, sub: str | None = None) -> str:
        from backends import jwt
        return jwt(self.secret, role, sub)

    async def start_proxies(self) -> None:
        self.proxies = {
            "xmtp": FaultProxy("127.0.0.1", self.xmtp_port, name="proxy→xmtp", half_open_hold=self.half_open, log=log),
            "supabase": FaultProxy("127.0.0.1", self.supabase_port, name="proxy→supabase",
                                   half_open_hold=self.half_open, log=log),
        }
        for proxy in self.proxies.values():
            await proxy.start()
        log(f"fault proxies: xmtp via {self.proxies['xmtp'].port}, supabase via {self.proxies['supabase'].port}")

    def write_bridge_config(self) -> None:
        xmtp_url = f"http://127.0.0.1:{self.proxies['xmtp'].port}"
        supabase_url = f"http://127.0.0.1:{self.proxies['supabase'].port}"
        pairs = []
        self.bridge_env = dict(os.environ, SOAK_XMTP_TOKEN=self.bridge_xmtp_token,
                               SOAK_SB_ANON=self.supabase.anon, SOAK_SB_TOKEN=self.supabase_jwt("authenticated", "bridge"))
        for pair in self.pairs:
            self.bridge_env[f"SOAK_GROUP_SECRET_{pair.index}"] = pair.secret.hex()
            pairs.append({"name": pair.name,
                          "a": {"adapter": "xmtp", "url": xmtp_url, "conversation": pair.group.hex(), "inbox": "bridge",
                                "token": "env:SOAK_XMTP_TOKEN", "groupSecret": f"env:SOAK_GROUP_SECRET_{pair.index}",
                                "database": f"bridge-xmtp-{pair.index}.sqlite"},
                          "b": {"adapter": "supabase", "url": supabase_url, "conversation": pair.conversation,
                                "user": "bridge", "apiKey": "env:SOAK_SB_ANON", "accessToken": "env:SOAK_SB_TOKEN"}})
        config = {"store": {"sqlite": "bridge.sqlite"}, "worker": "soak-bridge", "leaseSeconds": 10,
                  "statusEverySeconds": 2, "pairs": pairs}
        self.bridge_config = os.path.join(self.work, "bridge.json")
        with open(self.bridge_config, "w") as file:
            json.dump(config, file, indent=1)
        self.bridge = Child("bridge", [self.binary, "bridge", "--config", self.bridge_config],
                            os.path.join(self.work, "bridge.log"), self.bridge_env, ready_text="bridge worker")

    # MARK: Traffic

    def send_one(self, pair: Pair, side: str, number: int) -> None:
        """Sends one message straight to its backend, retrying (idempotently: same ID, same envelope) until the
        backend acknowledges it."""
        text = f"soak {pair.index} {side} {number}"
        key = str(uuid.uuid4())
        envelope = seal(pair.group, pair.secret, "dave", key, text_content(text)) if side == "xmtp" else None
        deadline = time.monotonic() + 180
        while True:
            try:
                if side == "xmtp":
                    self.node.send(pair.dave_token, envelope)
                else:
                    self.supabase.insert_message(pair.alice_token, key, pair.conversation, pair.alice, text)
                pair.sent[side][text] = key
                return
            except HTTPFailure as failure:
                if not failure.retryable or time.monotonic() > deadline:
                    raise
                self.send_retries += 1
                time.sleep(0.2 + random.random() * 0.3)

    async def traffic(self) -> None:
        loop = asyncio.get_running_loop()
        numbers = collections.Counter()
        pending: set[asyncio.Future] = set()
        interval = 1 / self.rate
        next_at = time.monotonic()
        end = time.monotonic() + self.seconds
        # Traffic goes on until the chaos has run its plan (every kind once), however long its steps took.
        while time.monotonic() < end or not self.chaos_done:
            pair = self.rng.choice(self.pairs)
            side = self.rng.choice(("xmtp", "supabase"))
            numbers[(pair.index, side)] += 1
            future = loop.run_in_executor(self.senders, self.send_one, pair, side, numbers[(pair.index, side)])
            pending.add(future)
            future.add_done_callback(pending.discard)
            next_at += interval
            await asyncio.sleep(max(0, next_at - time.monotonic()))
        log(f"traffic over: {sum(numbers.values())} messages queued; waiting for their acknowledgements")
        if pending:
            await asyncio.gather(*pending)

    # MARK: Chaos

    async def chaos(self) -> None:
        # Every kind once, in a random order, then random picks: a short run still sees each fault, even when its
        # steps (a server restart takes seconds) outlast SOAK_SECONDS.
        kinds = list(FAULTS) + list(PROCESS_EVENTS)
        plan = self.chaos_rng.sample(kinds, len(kinds))
        end = time.monotonic() + self.seconds
        while True:
            await asyncio.sleep(self.chaos_rng.expovariate(1 / self.chaos_every))
            if time.monotonic() >= end and not plan:
                self.chaos_done = True
                return
            kind = plan.pop(0) if plan else self.chaos_rng.choice(kinds)
            try:
                await self.apply(kind)
            except Exception as error:  # noqa: BLE001 - a chaos step that failed is reported, then the soak goes on
                log(f"chaos {kind} failed: {error}")
                self.events[f"{kind}_failed"] += 1

    async def apply(self, kind: str) -> None:
        if kind in FAULTS:
            target = self.chaos_rng.choice(("xmtp", "supabase"))
            done = await self.proxies[target].inject(kind, self.chaos_rng)
            if done:
                log(f"chaos: {self.proxies[target].name}: {done}")
            return
        down = self.chaos_rng.uniform(0.1, 2.0)
        if kind == "bridge_kill":
            await asyncio.to_thread(self.bridge.kill, signal.SIGKILL)
            log(f"chaos: bridge SIGKILLed; restarting it in {down:.1f} s")
            await asyncio.sleep(down)
            await asyncio.to_thread(self.bridge.start)
        elif kind in ("xmtp_restart", "supabase_restart"):
            server = self.xmtp_server if kind == "xmtp_restart" else self.supabase_server
            how = self.chaos_rng.choice((signal.SIGKILL, signal.SIGTERM))
            await asyncio.to_thread(server.kill, how)
            log(f"chaos: {server.name} server {'SIGKILLed' if how == signal.SIGKILL else 'stopped'}; "
                f"restarting it in {down:.1f} s")
            await asyncio.sleep(down)
            await asyncio.to_thread(server.start_ready)
        elif kind == "postgres_restart":
            mode = self.chaos_rng.choice(("fast", "immediate"))
            await asyncio.to_thread(self.postgres.stop, mode)
            log(f"chaos: postgresql stopped ({mode}); starting it in {down:.1f} s")
            await asyncio.sleep(down)
            await asyncio.to_thread(self.postgres.start)
        self.events[kind] += 1

    # MARK: Counting

    def read_pair(self, pair: Pair) -> None:
        """Reads what is new on both backends for `pair` (Supabase rows by version, XMTP envelopes by sequence)."""
        while True:
            rows = self.supabase.messages_after(pair.conversation, pair.supabase_version)
            for row in rows:
                pair.supabase_rows[row["id"]] = row["body"]
                pair.supabase_version = max(pair.supabase_version, int(row["version"]))
            if len(rows) < 1000:
                break
        while True:
            page = self.node.envelopes_after(pair.dave_token, pair.group, pair.xmtp_cursor)
            for sequence, data in page:
                pair.xmtp_cursor = max(pair.xmtp_cursor, sequence)
                pair.xmtp_envelopes += 1
                opened = open_envelope(data, pair.group, pair.secret)
                if opened is None:
                    pair.xmtp_unreadable += 1
                    continue
                _, key, content, text = opened
                pair.xmtp_messages[(key, content)] = (text, key)
            if len(page) < 100:
                break

    async def read_all(self) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self.readers, self.read_pair, pair) for pair in self.pairs))

    def ensure_up(self) -> None:
        if subprocess.run([os.path.join(self.postgres.bin, "pg_isready"), "-h", "127.0.0.1", "-p", str(self.postgres.port)],
                          capture_output=True).returncode != 0:
            self.postgres.start()
        for server in (self.supabase_server, self.xmtp_server):
            if not server.running:
                server.start_ready()
        if not self.bridge.running:
            self.bridge.start()

    def missing(self, pair: Pair) -> int:
        expected = pair.expected()
        on_supabase = set(pair.supabase_rows.values())
        on_xmtp = {text for text, _ in pair.xmtp_messages.values()}
        return len(expected - on_supabase) + len(expected - on_xmtp)

    async def settle(self) -> bool:
        """Waits until every acknowledged message is on both backends of its pair, or the settle time passes."""
        deadline = time.monotonic() + self.settle_seconds
        last_report = 0.0
        while True:
            try:
                await self.read_all()
            except HTTPFailure as failure:
                log(f"settling: reading the backends failed, trying again: {failure}")
            missing = sum(self.missing(pair) for pair in self.pairs)
            if missing == 0:
                return True
            now = time.monotonic()
            if now > deadline:
                return False
            if now - last_report > 10:
                log(f"settling: {missing} copies not there yet")
                last_report = now
            await asyncio.sleep(0.5)

    def report(self, settled: bool, timings: dict) -> bool:
        print("\npair      sent x/s   supabase rows  xmtp msgs (envelopes)   lost s/x   doubled s/x  stray s/x  key≠")
        totals = collections.Counter()
        for pair in self.pairs:
            expected = pair.expected()
            supabase = collections.Counter(pair.supabase_rows.values())
            xmtp = collections.Counter(text for text, _ in pair.xmtp_messages.values())
            lost = (len(expected - set(supabase)), len(expected - set(xmtp)))
            doubled = (sum(c - 1 for c in supabase.values() if c > 1), sum(c - 1 for c in xmtp.values() if c > 1))
            stray = (len(set(supabase) - expected), len(set(xmtp) - expected) + pair.xmtp_unreadable)
            # One key everywhere: the Supabase row ID and the XMTP idempotency key of each message are its MessageID.
            keys_supabase = {body: row for row, body in pair.supabase_rows.items()}
            keys_xmtp = {text: key for text, key in pair.xmtp_messages.values()}
            mismatched = sum(1 for text in expected
                             if (text in keys_supabase and keys_supabase[text] != pair.key_of(text))
                             or (text in keys_xmtp and keys_xmtp[text] != pair.key_of(text)))
            print(f"{pair.name:9} {len(pair.sent['xmtp']):5}/{len(pair.sent['supabase']):<5} {len(pair.supabase_rows):10}"
                  f"     {len(pair.xmtp_messages):7} ({pair.xmtp_envelopes:5})      {lost[0]:3}/{lost[1]:<3}    "
                  f"{doubled[0]:3}/{doubled[1]:<3}     {stray[0]:3}/{stray[1]:<3}   {mismatched:3}")
            totals.update({"sent": len(expected), "supabase": len(pair.supabase_rows), "xmtp": len(pair.xmtp_messages),
                           "envelopes": pair.xmtp_envelopes, "lost": sum(lost), "doubled": sum(doubled),
                           "stray": sum(stray), "mismatched": mismatched})
        faults = collections.Counter()
        for name, proxy in self.proxies.items():
            for kind, count in proxy.counts.items():
                faults[f"{name}.{kind}"] += count
        print(f"\nmessages: {totals['sent']} sent ({self.send_retries} send retries during outages); "
              f"supabase-like rows {totals['supabase']}, xmtp-like messages {totals['xmtp']} "
              f"({totals['envelopes']} envelopes: {totals['envelopes'] - totals['xmtp']} re-published copies, "
              "deduplicated by their content-derived ID)")
        print(f"lost {totals['lost']}, doubled {totals['doubled']}, stray {totals['stray']}, "
              f"key mismatches {totals['mismatched']}")
        print("chaos: " + ", ".join(f"{kind} {count}" for kind, count in sorted(self.events.items())))
        print("proxy: " + ", ".join(f"{kind} {count}" for kind, count in sorted(faults.items())))
        status = self.bridge_status()
        if status:
            print("bridge (last status line of each pair, counted since its last start): " + status)
        with open("/proc/loadavg") as file:
            machine = " ".join(file.read().split()[:3])
        print("time: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in timings.items())
              + f" (machine load average {machine} on {os.cpu_count()} CPUs)")
        ok = settled and totals["lost"] == 0 and totals["doubled"] == 0 and totals["stray"] == 0 \
            and totals["mismatched"] == 0 and totals["sent"] > 0
        print(f"seed {self.seed} (SOAK_SEED={self.seed} SOAK_SECONDS={self.seconds:g} SOAK_PAIRS={self.pair_count} "
              f"SOAK_RATE={self.rate:g} reproduces the plan)")
        print("SOAK PASSED: every message on both sides exactly once" if ok else
              "SOAK FAILED" + ("" if settled else f": not settled within {self.settle_seconds:.0f} s"))
        return ok

    def bridge_status(self) -> str:
        """Quarantined / collision counts summed over the last status line of each pair."""
        last: dict[str, str] = {}
        try:
            with open(self.bridge.log_path, encoding="utf-8", errors="replace") as file:
                for line in file:
                    if " pair soak-" in line and "a→b" in line:
                        name = line.split(" pair ", 1)[1].split(":", 1)[0]
                        last[name] = line
        except OSError:
            return ""
        sums = collections.Counter()
        for line in last.values():
            for label in ("a→b", "b→a", "waiting", "quarantined", "collisions"):
                part = line.split(label + " ", 1)
                if len(part) == 2:
                    digits = part[1].split(",", 1)[0].strip()
                    if digits.isdigit():
                        sums[label] += int(digits)
        return ", ".join(f"{label} {sums[label]}" for label in ("a→b", "b→a", "waiting", "quarantined", "collisions"))

    # MARK: Run

    async def run(self) -> int:
        log(f"soak: {self.seconds:g} s, {self.pair_count} pairs, {self.rate:g} msg/s, chaos every ~{self.chaos_every:.1f} s, "
            f"seed {self.seed}; files in {self.work}")
        unit = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                            "test_faultproxy.py")], capture_output=True, text=True)
        if unit.returncode != 0:
            print(unit.stdout + unit.stderr)
            log("the fault proxy's unit tests failed")
            return 1
        log("fault proxy unit tests passed")
        asyncio.get_running_loop().set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=8))
        timings = {}
        began = time.monotonic()
        await asyncio.to_thread(self.start_backends)
        await asyncio.to_thread(self.make_pairs)
        await self.start_proxies()
        self.write_bridge_config()
        self.bridge.start()
        await asyncio.to_thread(self.bridge.wait_ready)
        timings["setup"] = time.monotonic() - began
        began = time.monotonic()
        await asyncio.gather(self.traffic(), self.chaos())
        timings["traffic and chaos"] = time.monotonic() - began
        # Whatever a failed chaos step left down comes back; faults in progress stay until they end by themselves.
        await asyncio.to_thread(self.ensure_up)
        began = time.monotonic()
        settled = await self.settle()
        timings["settling"] = time.monotonic() - began
        # Late duplicates (a copy retried after the check) would show in a second count once the bridge is idle.
        await asyncio.sleep(3)
        await self.read_all()
        timings["total"] = time.monotonic() - STARTED
        ok = self.report(settled, timings)
        if not ok:
            self.keep = True
        return 0 if ok else 1

    async def close(self) -> None:
        for proxy in getattr(self, "proxies", {}).values():
            await proxy.close()
        for name in ("bridge", "supabase_server", "xmtp_server"):
            child = getattr(self, name, None)
            if child:
                child.kill(signal.SIGTERM)
        if getattr(self, "postgres", None):
            self.postgres.stop("fast")
        if self.keep:
            log(f"kept {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)


async def main() -> int:
    soak = Soak()
    try:
        return await soak.run()
    except Exception:
        log(f"soak stopped by an error; files kept in {soak.work}")
        soak.keep = True
        for name in ("bridge", "supabase_server", "xmtp_server"):
            child = getattr(soak, name, None)
            if child:
                print(f"--- {child.log_path} (tail)\n{child.tail()}")
        raise
    finally:
        await soak.close()


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(asyncio.run(main()))
