"""Dynamic batching: concurrent requests joined into one ``predict`` call and split back.
64 requests at once, with and without batching; the batch sizes come from /metrics.

    python examples/batching/demo.py
"""

import asyncio
import time
from pathlib import Path

import httpx
import inferwire
import numpy as np

model = f"{Path(__file__).parent / 'model.py'}:Scorer"


async def burst(url: str) -> float:
    async with inferwire.AsyncClient(url) as c:
        start = time.perf_counter()
        out = await asyncio.gather(*(c.predict(np.array([[i, 1.0]])) for i in range(64)))
        assert [o.tolist() for o in out] == [[[i + 1.0]] for i in range(64)]
        return time.perf_counter() - start


for args in ((), ("--max-batch-size", "16", "--max-batch-delay", "0.002")):
    with inferwire.local(model, *args) as server:
        took = asyncio.run(burst(server.url))
        calls = [
            line
            for line in httpx.get(server.url + "/metrics").text.splitlines()
            if line.startswith("inferwire_batch_size_count")
        ]
        print(
            f"{' '.join(args) or 'no batching'}: 64 requests in {took * 1000:.0f} ms, "
            f"model calls: {calls[0].split()[-1] if calls else '?'}"
        )
