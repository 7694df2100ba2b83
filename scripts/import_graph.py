"""The module graph of a Rust crate: which top-level modules each one names
(``crate::NAME``), and the import circles among them.

    python scripts/import_graph.py [crates/inferwire-server/src]   # the graph, then the circles
    python scripts/import_graph.py --check                          # exit 1 if any circle

A module is a top-level file or folder of ``src/``; its submodules count as it. Comments
are left out, so naming a module in a doc comment is not an import. The architecture doc
(docs/concepts/architecture.md) shows this graph.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DEFAULT = Path(__file__).resolve().parent.parent / "crates" / "inferwire-server" / "src"
_USE = re.compile(r"\bcrate::(\w+)")
_GROUP = re.compile(r"\bcrate::\{([^}]*)\}", re.S)


def _code(text: str) -> str:
    """The text without `//` comments (doc comments included)."""
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def graph(src: Path) -> dict[str, set[str]]:
    mods: dict[str, set[str]] = {}
    for path in sorted(src.rglob("*.rs")):
        rel = path.relative_to(src)
        top = rel.parts[0].removesuffix(".rs")
        if top in ("lib", "main"):
            continue
        code = _code(path.read_text())
        names = set(_USE.findall(code))
        for group in _GROUP.findall(code):
            names.update(re.findall(r"(?:^|,)\s*(\w+)", group))
        mods.setdefault(top, set()).update(n for n in names if n != top)
    known = set(mods)
    return {m: {d for d in deps if d in known} for m, deps in mods.items()}


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    src = Path(args[0]) if args else DEFAULT
    g = graph(src)
    found = circles(g)
    if not check:
        for m in sorted(g):
            print(f"{m} -> {', '.join(sorted(g[m])) or '(nothing)'}")
        print()
    for comp in found:
        print("circle:", " <-> ".join(comp))
    if not found:
        print("no import circles")
    return 1 if check and found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
