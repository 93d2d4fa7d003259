"""A trained checkpoint's weights in pieces of at most a given size, and back: for moving a model
off a machine that returns only small files (the borrowed GPU returns at most 8 files of 16 MiB),
or onto one that receives 64 MiB a call. The weights travel as fp16 (half the bytes; the served
model is int8 anyway) or, with --int8, every matrix as int8 with one scale per row (a quarter:
MPNet-base's 109M parameters in 110 MB, where fp16 would not come back in 8 files), with the
config and tokenizer files beside them; `join` writes a checkpoint folder `from_pretrained` loads,
in fp32.

`python -m ambigqa_train.weight_parts split <checkpoint> <out> [--max-mib 15] [--int8]`
`python -m ambigqa_train.weight_parts join <parts folder> <checkpoint>`
"""
from __future__ import annotations

import argparse
import io
import json
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

SIDE_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def int8_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 with one fp32 scale per row (a Linear's output unit, an embedding's token)."""
    flat = w.float().reshape(w.shape[0], -1)
    scale = flat.abs().amax(1).clamp_min(1e-12) / 127
    return (flat / scale[:, None]).round().clamp(-127, 127).to(torch.int8).reshape(w.shape), scale


def compact(state: dict[str, torch.Tensor], int8: bool) -> dict[str, Any]:
    """What travels: fp16 tensors, or with int8 each matrix as (int8, row scales) and the rest
    (biases, LayerNorms) fp16."""
    out: dict[str, Any] = {}
    for k, v in state.items():
        if not v.is_floating_point():
            out[k] = v.contiguous()
        elif int8 and v.dim() >= 2:
            out[k] = int8_rows(v)
        else:
            out[k] = v.to(torch.float16).contiguous()
    return out


def expand(state: dict[str, Any]) -> dict[str, torch.Tensor]:
    out = {}
    for k, v in state.items():
        if isinstance(v, tuple):
            q, scale = v
            out[k] = (q.float().reshape(q.shape[0], -1) * scale[:, None]).reshape(q.shape).contiguous()
        else:
            out[k] = v.float() if v.is_floating_point() else v
    return out


def split(checkpoint: Path, out: Path, max_bytes: int, int8: bool = False) -> list[Path]:
    state = load_file(str(checkpoint / "model.safetensors"))
    buffer = io.BytesIO()
    torch.save(compact(state, int8), buffer)
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
    (out / "parts.json").write_text(json.dumps({"parts": [p.name for p in parts], "bytes": len(data), "weights": "int8" if int8 else "fp16"}) + "\n")
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
    save_file(expand(state), str(checkpoint / "model.safetensors"))
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
    s.add_argument("--int8", action="store_true", help="matrices as int8 with a scale per row (default: fp16)")
    j = sub.add_parser("join")
    j.add_argument("parts", type=Path)
    j.add_argument("checkpoint", type=Path)
    a = ap.parse_args(argv)
    if a.cmd == "split":
        parts = split(a.checkpoint, a.out, int(a.max_mib * 1024 * 1024), a.int8)
        print(f"{len(parts)} parts in {a.out}")
    else:
        join(a.parts, a.checkpoint)
        print(f"checkpoint at {a.checkpoint}")


if __name__ == "__main__":
    main()
