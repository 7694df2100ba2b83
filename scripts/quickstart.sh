#!/usr/bin/env bash
# Installs inferwire (release build) and serves the bundled example model on
# REST :9000 and gRPC :5000, showing a REST call and a gRPC call against it.
# Ctrl-C stops the server.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

# Beside the server's own: what the README's and docs' examples import (the [client] and
# [images] extras: inferwire.Client, msgpack replies, image-stats; grpcio-tools for the
# gRPC call's stubs).
ensure_venv "maturin>=1.7,<2" "numpy>=1.24" "pyyaml>=6" "pydantic>=2.7" "pydantic-settings>=2.3" "grpcio>=1.60" "grpcio-tools>=1.60" \
    "httpx[http2]>=0.27" "msgpack>=1.0" "msgpack-numpy>=0.4.8" "pillow>=10"
if [[ "${INFERWIRE_SKIP_BUILD:-}" == 1 ]]; then
    # tests/docs/test_quickstart.py: the extension the test run built is the one to serve.
    log "using the inferwire extension already built (INFERWIRE_SKIP_BUILD=1)"
else
    build_extension --release
fi

HTTP_PORT="${INFERWIRE_HTTP_PORT:-9000}"
GRPC_PORT="${INFERWIRE_GRPC_PORT:-5000}"
MODEL="examples/seldon_model/model.py:IrisLikeClassifier"
cd "$ROOT"
log "serving $MODEL"
"$VENV/bin/inferwire" serve "$MODEL" --http-port "$HTTP_PORT" --grpc-port "$GRPC_PORT" &
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null; wait $SERVER; exit $?' INT TERM
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$HTTP_PORT/health/ping" >/dev/null && break
    kill -0 $SERVER 2>/dev/null || exit 1
    sleep 0.1
done

REST_CALL="curl -s -H 'Content-Type: application/json' \\
  -d '{\"data\": {\"names\": [\"sepal_length\", \"sepal_width\", \"petal_length\", \"petal_width\"], \"ndarray\": [[5.1, 3.5, 1.4, 0.2]]}}' \\
  http://127.0.0.1:$HTTP_PORT/api/v1.0/predictions"
log "REST call:"
echo "$REST_CALL"
eval "$REST_CALL"; echo
log "gRPC call (seldon.protos.Seldon/Predict, a tensor payload):"
echo "$VENV/bin/python examples/seldon_model/grpc_call.py 127.0.0.1:$GRPC_PORT"
"$VENV/bin/python" examples/seldon_model/grpc_call.py "127.0.0.1:$GRPC_PORT"
log "serving on http://127.0.0.1:$HTTP_PORT and 127.0.0.1:$GRPC_PORT; Ctrl-C stops"
wait $SERVER
