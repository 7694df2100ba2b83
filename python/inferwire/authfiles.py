"""``inferwire auth``: lines for the token and user files the server reads
(``--auth-tokens``, ``--auth-users``). A token is printed once and only its hash is
stored; a password is read from stdin or a prompt, never from the command line."""

from __future__ import annotations

import argparse
import getpass
import secrets
import sys
from pathlib import Path
from typing import Any

from . import _core

SCOPES = ("predict", "publish")


def _scopes(text: str) -> str:
    scopes = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in scopes if s not in SCOPES]
    if bad or not scopes:
        raise argparse.ArgumentTypeError(
            f"scopes are a comma-separated list of {', '.join(SCOPES)}"
        )
    return ",".join(scopes)


def _name(text: str) -> str:
    if not text or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError("a name has no spaces")
    return text


def add_parser(sub: Any) -> None:
    p = sub.add_parser("auth", help="make lines for the token and user files")
    kinds = p.add_subparsers(dest="kind", required=True)
    t = kinds.add_parser("token", help="a new random bearer token (printed once)")
    u = kinds.add_parser("user", help="a user for POST /login (password from stdin or prompt)")
    for q in (t, u):
        q.add_argument("name", type=_name)
        q.add_argument("--scopes", type=_scopes, default="predict", help="predict,publish")
        q.add_argument("--file", type=Path, required=True, help="append the line to this file")
    u.add_argument("--password-stdin", action="store_true", help="read the password from stdin")


def _append(path: Path, line: str) -> None:
    with path.open("a") as f:
        f.write(line + "\n")
    path.chmod(0o600)


def run(args: dict[str, Any]) -> int:
    if args["kind"] == "token":
        # A prefix, so that no token starts with "-": `--token -x...` is an option to
        # argparse and curl alike (1 token in 64 did, and failed when pasted).
        token = "iwt_" + secrets.token_urlsafe(32)
        _append(args["file"], f"{args['name']} {args['scopes']} {_core.token_digest(token)}")
        print(token)  # the only copy: the file keeps its hash
        return 0
    if args["password_stdin"]:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass(f"password for {args['name']}: ")
    if not password:
        print("inferwire: an empty password", file=sys.stderr)
        return 2
    _append(args["file"], f"{args['name']} {args['scopes']} {_core.hash_password(password)}")
    print(f"added {args['name']} to {args['file']}", file=sys.stderr)
    return 0
