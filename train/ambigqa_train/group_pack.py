"""Reader groups (reader-groups-*.jsonl) packed small for a machine that receives little: each
distinct passage written once and the groups referring to it by number (SQuAD's 88k questions share
20k paragraphs, and their hard negatives share the store's), then xz. `unpack` writes the JSON Lines
back exactly.

`python -m ambigqa_train.group_pack pack data/train/reader-groups-train.jsonl data/gpu/groups.json.xz`
`python -m ambigqa_train.group_pack unpack data/gpu/groups.json.xz data/train/reader-groups-train.jsonl`
"""
from __future__ import annotations

import argparse
import json
import lzma
from pathlib import Path

from .common import write_atomic


def pack(groups: Path, out: Path) -> int:
    passages: dict[tuple[str, str], int] = {}

    def ref(p: dict[str, str]) -> int:
        return passages.setdefault((p["title"], p["text"]), len(passages))

    rows = []
    for line in groups.read_text().splitlines():
        g = json.loads(line)
        rows.append({**g, "positive": ref(g["positive"]), "negatives": [ref(n) for n in g["negatives"]]})
    out.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps({"passages": [[t, x] for t, x in passages], "groups": rows}, ensure_ascii=False)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(lzma.compress(data.encode(), preset=6))
    tmp.replace(out)
    return len(rows)


def unpack(packed: Path, out: Path) -> int:
    data = json.loads(lzma.decompress(packed.read_bytes()))
    passages = [{"title": t, "text": x} for t, x in data["passages"]]
    lines = [json.dumps({**g, "positive": passages[g["positive"]], "negatives": [passages[n] for n in g["negatives"]]}, ensure_ascii=False) for g in data["groups"]]
    write_atomic(out, "".join(line + "\n" for line in lines))
    return len(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.group_pack")
    ap.add_argument("cmd", choices=["pack", "unpack"])
    ap.add_argument("source", type=Path)
    ap.add_argument("out", type=Path)
    a = ap.parse_args(argv)
    n = (pack if a.cmd == "pack" else unpack)(a.source, a.out)
    print(f"{a.cmd}: {n} groups -> {a.out}")


if __name__ == "__main__":
    main()
