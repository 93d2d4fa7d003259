"""A LoRA adapter from train_lm_adapter (safetensors, transformers' names) → llama.cpp's GGUF LoRA file,
which serving loads beside the base GGUF (node-llama-cpp's `lora`).

llama.cpp's layout (its convert_lora_to_gguf.py): per base tensor `blk.N.attn_q.weight`, tensors
`blk.N.attn_q.weight.lora_a` of PyTorch shape (rank, in) and `...lora_b` of shape (out, rank); the
scale alpha/rank comes from `adapter.lora.alpha` and the rank read off lora_a.

  python -m ambigqa_train.lm_adapter_gguf --adapter adapter-qd.safetensors --out qd-lora.gguf
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from .lm_base import _NAME_MAP

_GGUF_KIND = {v: k for k, v in _NAME_MAP.items()}


def gguf_name(hf_module: str) -> str:
    """`model.layers.3.self_attn.q_proj` → `blk.3.attn_q.weight`."""
    parts = hf_module.split(".")
    layer, kind = parts[2], ".".join(parts[3:])
    return f"blk.{layer}.{_GGUF_KIND[kind]}.weight"


def convert(adapter: Path, out: Path) -> dict[str, object]:
    import gguf
    from safetensors import safe_open
    with safe_open(str(adapter), "np") as f:
        meta = f.metadata() or {}
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    alpha = float(meta["alpha"])
    w = gguf.GGUFWriter(str(out) + ".tmp", "gemma3")
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", alpha)
    w.add_string("general.name", f"ambigqa {meta.get('task', '')} LoRA")
    modules = sorted({k.rsplit(".lora_", 1)[0] for k in tensors})
    for m in modules:
        a = tensors[f"{m}.lora_A.weight"].astype(np.float16)  # (rank, in)
        b = tensors[f"{m}.lora_B.weight"].astype(np.float16)  # (out, rank)
        name = gguf_name(m)
        w.add_tensor(f"{name}.lora_a", np.ascontiguousarray(a))
        w.add_tensor(f"{name}.lora_b", np.ascontiguousarray(b))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    Path(str(out) + ".tmp").replace(out)
    return {"modules": len(modules), "rank": int(tensors[f"{modules[0]}.lora_A.weight"].shape[0]), "alpha": alpha,
            "bytes": out.stat().st_size}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.lm_adapter_gguf")
    ap.add_argument("--adapter", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    print(json.dumps(convert(a.adapter, a.out)))


if __name__ == "__main__":
    main()
