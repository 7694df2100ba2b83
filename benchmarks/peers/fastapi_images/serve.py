"""Starts seed 001's two image servers side by side: REST (server_rest.py) and gRPC
(server_grpc.py), with benchmarks/peers/pair.py.

Run it with the virtualenv from ``install.sh``:

    .tools/peers/fastapi-images/bin/python benchmarks/peers/fastapi_images/serve.py \\
        [--http-port 8000] [--grpc-port 50051]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import pair  # noqa: E402

PROBE = b'{"field1": "a", "field2": "b", "field3": 1, "field4": {"c": 2}}'

if __name__ == "__main__":
    raise SystemExit(pair.main(__doc__ or "", HERE, "server_rest.py", "/basic", PROBE))
