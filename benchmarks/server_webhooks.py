"""Webhook ingestion rate of the jupyter-server extension.

Signed OpenAI-style webhooks (Standard Webhooks, a ``whsec_`` secret), each with its own event
id, are POSTed to ``/agi/v1/webhooks/openai`` one at a time and then with 50 in flight; every
delivery is verified and stored once (the rate limit is off for the measurement). Then the
same delivery is repeated: redeliveries are answered without a second insert.

    .venv/bin/python benchmarks/server_webhooks.py [--deliveries 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
from standardwebhooks.webhooks import Webhook

sys.path.insert(0, str(Path(__file__).parent))
from server_common import Servers, cpu_seconds, servers

SECRET = "whsec_" + base64.b64encode(b"benchmark-webhook-secret-32bytes").decode()


def delivery(n: int) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(
        {"id": f"evt_{n}", "object": "event", "type": "response.completed",
         "created_at": int(time.time()), "data": {"id": f"resp_{n}"}}
    )  # fmt: skip
    moment = datetime.now(UTC)
    headers = {
        "webhook-id": f"msg_{n}",
        "webhook-timestamp": str(int(moment.timestamp())),
        "webhook-signature": Webhook(SECRET).sign(f"msg_{n}", moment, body),
        "content-type": "application/json",
    }
    return body.encode(), headers


async def send(
    running: Servers, items: list[tuple[bytes, dict[str, str]]], in_flight: int
) -> float:
    limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
    gate = asyncio.Semaphore(in_flight)
    async with httpx.AsyncClient(base_url=running.base, timeout=60, limits=limits) as client:

        async def post(body: bytes, headers: dict[str, str]) -> None:
            async with gate:
                reply = await client.post("/webhooks/openai", content=body, headers=headers)
                reply.raise_for_status()

        start = time.perf_counter()
        await asyncio.gather(*(post(b, h) for b, h in items))
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=2000)
    args = parser.parse_args()
    n = args.deliveries
    with (
        tempfile.TemporaryDirectory() as tmp,
        servers(
            Path(tmp),
            f"--AgiExtensionApp.webhook_secret={SECRET}",
            "--AgiExtensionApp.webhook_rate_limit=0",
        ) as running,
    ):
        asyncio.run(send(running, [delivery(-i) for i in range(1, 21)], 1))  # warm-up
        cpu = cpu_seconds(running.pid)
        sequential = asyncio.run(send(running, [delivery(i) for i in range(n)], 1))
        cpu_sequential = cpu_seconds(running.pid) - cpu
        parallel = asyncio.run(send(running, [delivery(n + i) for i in range(n)], 50))
        same = [delivery(10**9)] * n
        repeated = asyncio.run(send(running, same, 50))
        stats = httpx.get(f"{running.base}/stats", headers=running.headers).json()
    print(
        f"{n} deliveries, one at a time: {n / sequential:.0f}/s "
        f"({sequential / n * 1000:.2f} ms each; server CPU {cpu_sequential / n * 1000:.2f} ms each)"
    )
    print(f"{n} deliveries, 50 in flight:  {n / parallel:.0f}/s")
    print(f"{n} redeliveries of one event, 50 in flight: {n / repeated:.0f}/s")
    print(f"stored webhook events: {stats['webhook_events']} (expected {2 * n + 21})")


if __name__ == "__main__":
    main()
