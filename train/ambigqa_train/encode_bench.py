"""The GPU batch's step d (issue 37): `ambigqa index encode --device cuda`'s encoder
(encode_passages.encode_store) timed on a store of N passages, with the 21M-passage time projected
from it. A device call carries 64 MiB and a 1M store is 4.4 GB, so the store is made where it is
encoded: a sample of real passages (DPR's TSV: id, text, title, with its header, gzipped or not;
by default the demo corpus, 5,531 real 100-word Wikipedia passages, which travels with the tree)
repeated under new ids until there are N, in a store with the tables encode_store reads (passages,
meta state 'ready'). Encoding time depends on the passages' lengths, not on repeats, so the rate
is the real one.

`python -m ambigqa_train.encode_bench --count 1000000 --store /tmp/s --device cuda --out encode.json`
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import torch

from .common import DEVICES, pick_device
from .encode_passages import encode_store
from .onnx_weights import ENCODERS_DIR

DPR_PASSAGES = 21_015_324  # psgs_w100.tsv, the paper's corpus


DEMO = Path(__file__).resolve().parents[2] / "assets" / "demo" / "passages.tsv.gz"


def read_sample(path: Path) -> list[tuple[str, str, str]]:
    """(id, title, text) from a DPR-style TSV (id, text, title; a header line)."""
    rows = []
    with (gzip.open(path, "rt") if path.suffix == ".gz" else path.open()) as f:
        for n, line in enumerate(f):
            cols = line.rstrip("\n").split("\t")
            if n > 0 and len(cols) >= 3:
                rows.append((cols[0], cols[2], cols[1]))
    if not rows:
        raise SystemExit(f"no passages in {path}")
    return rows


def build_store(sample: list[tuple[str, str, str]], count: int, store: Path) -> None:
    """A store of `count` passages (the sample, repeated with `#k` ids), made once: an existing one
    of that size is kept, so a rerun resumes the encoding where encode_store left it."""
    db_path = store / "passages.sqlite"
    if db_path.exists():
        db = sqlite3.connect(str(db_path))
        try:
            have = db.execute("SELECT count(*) FROM passages").fetchone()[0]
            ready = db.execute("SELECT value FROM meta WHERE key = 'state'").fetchone()
        finally:
            db.close()
        if have == count and ready == ("ready",):
            return
        db_path.unlink()
    store.mkdir(parents=True, exist_ok=True)
    part = store / "passages.sqlite.part"
    part.unlink(missing_ok=True)
    db = sqlite3.connect(str(part))
    try:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("CREATE TABLE passages (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, title TEXT NOT NULL, text TEXT NOT NULL)")
        rows = ((f"{pid}#{i // len(sample)}", title, text) for i in range(count) for pid, title, text in (sample[i % len(sample)],))
        db.executemany("INSERT INTO passages (id, title, text) VALUES (?, ?, ?)", rows)
        db.execute("INSERT INTO meta (key, value) VALUES ('state', 'ready')")
        db.commit()
    finally:
        db.close()
    os.replace(part, db_path)  # whole or not at all


def run(sample_path: Path, count: int, store: Path, model: str, models_dir: Path, device: torch.device, batch_size: int) -> dict[str, Any]:
    t0 = time.time()
    build_store(read_sample(sample_path), count, store)
    built = time.time() - t0
    done = encode_store(store, model, models_dir, device, batch_size)
    rate = done["encoded"] / max(1e-9, done["seconds"])
    return {
        "passages": count,
        "encoded_this_run": done["encoded"],
        "seconds": done["seconds"],
        "passages_per_s": round(rate, 1),
        "projected_21m_hours": round(DPR_PASSAGES / max(1e-9, rate) / 3600, 2) if done["encoded"] else None,
        "store_build_seconds": round(built, 1),
        "model": model,
        "batch_size": batch_size,
        "device": device.type,
        "card": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.encode_bench")
    ap.add_argument("--passages", type=Path, default=DEMO, help="the sample: a TSV of id, text, title (default: the demo corpus)")
    ap.add_argument("--count", type=int, default=1_000_000)
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--model", default="e5-small-v2-int8")
    ap.add_argument("--models-dir", type=Path, default=ENCODERS_DIR)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--device", choices=DEVICES, default="cuda")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True, help="the result, as JSON")
    a = ap.parse_args(argv)
    if a.count < 1:
        raise SystemExit("--count must be at least 1")
    torch.set_num_threads(a.threads)
    result = run(a.passages, a.count, a.store, a.model, a.models_dir, pick_device(a.device), a.batch_size)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = a.out.with_suffix(".part")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp, a.out)
    print(json.dumps({"encode_bench": result}), flush=True)


if __name__ == "__main__":
    main()
