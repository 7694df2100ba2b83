"""Starts seed 003's two numpy echo servers side by side: aiohttp (server_aiohttp.py) and
gRPC (server_grpc.py), with benchmarks/peers/pair.py.

Run it with the virtualenv from ``install.sh``:

    .tools/peers/numpy-echo/bin/python benchmarks/peers/numpy_echo/serve.py \\
        [--http-port 8080] [--grpc-port 50051]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import pair  # noqa: E402

PROBE = b'{"data": [[1, 2], [3, 4]], "dtype": "<i8"}'

if __name__ == "__main__":
    raise SystemExit(pair.main(__doc__ or "", HERE, "server_aiohttp.py", "/json", PROBE))
