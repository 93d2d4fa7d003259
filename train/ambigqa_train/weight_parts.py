"""A trained checkpoint's weights in pieces of at most a given size, and back: for moving a model
off a machine that returns only small files (the borrowed GPU returns at most 8 files of 16 MiB).
The weights travel as fp16 (half the bytes; the served model is int8 anyway) with the config and
tokenizer files beside them; `join` writes a checkpoint folder `from_pretrained` loads, in fp32.

`python -m ambigqa_train.weight_parts split <checkpoint> <out> [--max-mib 15]`
`python -m ambigqa_train.weight_parts join <parts folder> <checkpoint>`
"""
from __future__ import annotations

import argparse
import io
import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

SIDE_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def split(checkpoint: Path, out: Path, max_bytes: int) -> list[Path]:
    state = load_file(str(checkpoint / "model.safetensors"))
    half = {k: v.to(torch.float16).contiguous() if v.is_floating_point() else v.contiguous() for k, v in state.items()}
    buffer = io.BytesIO()
    torch.save(half, buffer)
    data = buffer.getvalue()
    out.mkdir(parents=True, exist_ok=True)
    parts = []
    for i in range(0, len(data), max_bytes):
        part = out / f"weights.part{i // max_bytes:03d}"
        part.write_bytes(data[i : i + max_bytes])
        parts.append(part)
    for name in SIDE_FILES:
        if (checkpoint / name).exists():
            shutil.copy(checkpoint / name, out / name)
    (out / "parts.json").write_text(json.dumps({"parts": [p.name for p in parts], "bytes": len(data)}) + "\n")
    return parts


def join(parts_dir: Path, checkpoint: Path) -> None:
    index = json.loads((parts_dir / "parts.json").read_text())
    missing = [name for name in index["parts"] if not (parts_dir / name).exists()]
    if missing:
        raise SystemExit(f"{parts_dir}: a part is missing ({', '.join(missing)})")
    data = b"".join((parts_dir / name).read_bytes() for name in index["parts"])
    if len(data) != index["bytes"]:
        raise SystemExit(f"{parts_dir}: {len(data)} bytes in the parts, parts.json says {index['bytes']}: a part is missing or cut")
    state = torch.load(io.BytesIO(data), weights_only=True)
    checkpoint.mkdir(parents=True, exist_ok=True)
    save_file({k: v.float() if v.is_floating_point() else v for k, v in state.items()}, str(checkpoint / "model.safetensors"))
    for name in SIDE_FILES:
        if (parts_dir / name).exists():
            shutil.copy(parts_dir / name, checkpoint / name)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.weight_parts")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("split")
    s.add_argument("checkpoint", type=Path)
    s.add_argument("out", type=Path)
    s.add_argument("--max-mib", type=float, default=15)
    j = sub.add_parser("join")
    j.add_argument("parts", type=Path)
    j.add_argument("checkpoint", type=Path)
    a = ap.parse_args(argv)
    if a.cmd == "split":
        parts = split(a.checkpoint, a.out, int(a.max_mib * 1024 * 1024))
        print(f"{len(parts)} parts in {a.out}")
    else:
        join(a.parts, a.checkpoint)
        print(f"checkpoint at {a.checkpoint}")


if __name__ == "__main__":
    main()
