#!/usr/bin/env python3
"""Unit tests of the fault-injecting proxy against an echo server (run by soak.py before the soak, or alone:
``python3 scripts/soak/test_faultproxy.py``). Every wait is for a condition, bounded by a generous timeout."""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
import unittest

sys.dont_write_bytecode = True  # no __pycache__ next to the scripts in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultproxy import FaultProxy  # noqa: E402

PATIENCE = 10.0  # seconds; only reached when something is wrong


class FaultProxyTests(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.server_closed = asyncio.Event()

        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while data := await reader.read(4096):
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                self.server_closed.set()
                writer.close()

        self.echo = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = self.echo.sockets[0].getsockname()[1]
        self.proxy = FaultProxy("127.0.0.1", port, half_open_hold=60)
        await self.proxy.start()
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.proxy.port)
        self.rng = random.Random(1)
        await self.round_trip(b"warm-up")

    async def asyncTearDown(self) -> None:
        self.writer.close()
        await self.proxy.close()
        self.echo.close()

    async def round_trip(self, data: bytes) -> bytes:
        self.writer.write(data)
        await self.writer.drain()
        return await asyncio.wait_for(self.reader.readexactly(len(data)), PATIENCE)

    async def test_forwards_both_ways(self) -> None:
        self.assertEqual(await self.round_trip(b"hello" * 10000), b"hello" * 10000)
        self.assertEqual(self.proxy.counts["connections"], 1)

    async def test_delay_holds_bytes_then_delivers_them(self) -> None:
        self.assertIsNotNone(await self.proxy.inject("delay", self.rng, seconds=0.5))
        started = time.monotonic()
        self.assertEqual(await self.round_trip(b"late"), b"late")
        self.assertGreaterEqual(time.monotonic() - started, 0.45)
        self.assertEqual(await self.round_trip(b"then on time"), b"then on time")

    async def test_drop_ends_both_sides_cleanly(self) -> None:
        self.assertIsNotNone(await self.proxy.inject("drop", self.rng))
        self.assertEqual(await asyncio.wait_for(self.reader.read(), PATIENCE), b"")
        await asyncio.wait_for(self.server_closed.wait(), PATIENCE)
        self.assertEqual(self.proxy.counts["drop"], 1)

    async def test_reset_aborts_with_rst(self) -> None:
        self.assertIsNotNone(await self.proxy.inject("reset", self.rng))
        with self.assertRaises(ConnectionResetError):
            await asyncio.wait_for(self.reader.read(), PATIENCE)
        await asyncio.wait_for(self.server_closed.wait(), PATIENCE)

    async def test_half_open_down_discards_answers_but_keeps_the_socket(self) -> None:
        self.assertIsNotNone(await self.proxy.inject("halfopen", self.rng, direction="down"))
        self.writer.write(b"into the void")
        await self.writer.drain()
        # Nothing comes back and nothing closes while the fault holds.
        with self.assertRaises(asyncio.TimeoutError):
            await asyncio.wait_for(self.reader.read(1), 0.5)
        self.assertFalse(self.server_closed.is_set())
        # The client notices (here: gives up) and closes: counted.
        self.writer.close()
        await asyncio.wait_for(self.server_closed.wait(), PATIENCE)
        await self.wait_for(lambda: self.proxy.counts["halfopen_client_closed"] == 1)
        self.assertEqual(self.proxy.counts["halfopen_server_closed"], 0)

    async def test_half_open_up_discards_requests(self) -> None:
        self.assertIsNotNone(await self.proxy.inject("halfopen", self.rng, direction="up"))
        self.writer.write(b"never reaches the server")
        await self.writer.drain()
        with self.assertRaises(asyncio.TimeoutError):
            await asyncio.wait_for(self.reader.read(1), 0.5)

    async def test_half_open_is_reset_after_its_hold(self) -> None:
        self.assertIsNotNone(await self.proxy.inject("halfopen", self.rng, seconds=0.3, direction="down"))
        with self.assertRaises(ConnectionResetError):
            await asyncio.wait_for(self.reader.read(), PATIENCE)
        self.assertEqual(self.proxy.counts["halfopen_expired"], 1)
        self.assertEqual(self.proxy.counts["halfopen_client_closed"], 0)

    async def test_target_down_resets_new_clients(self) -> None:
        self.echo.close()
        await self.echo.wait_closed()
        proxy = FaultProxy("127.0.0.1", self.echo_port_closed(), half_open_hold=60)
        await proxy.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
            with self.assertRaises((ConnectionResetError, asyncio.IncompleteReadError)):
                data = await asyncio.wait_for(reader.read(), PATIENCE)
                if data == b"":
                    raise asyncio.IncompleteReadError(b"", 1)
            writer.close()
            self.assertEqual(proxy.counts["refused"], 1)
        finally:
            await proxy.close()

    async def test_no_live_connection_means_no_fault(self) -> None:
        proxy = FaultProxy("127.0.0.1", 9, half_open_hold=60)
        self.assertIsNone(await proxy.inject("reset", self.rng))

    def echo_port_closed(self) -> int:
        return self.proxy.target[1]

    async def wait_for(self, condition, timeout: float = PATIENCE) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                self.fail("condition not met in time")
            await asyncio.sleep(0.02)


if __name__ == "__main__":
    unittest.main(verbosity=2)
