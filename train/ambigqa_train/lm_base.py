"""The pretrained decoder (Gemma 3 270M, GGUF Q4_K_M) as PyTorch weights, with a pruned vocabulary.

The GGUF file is what serving runs (llama.cpp) and what a LoRA adapter is trained against, so the
weights here are its own quantised values dequantised, never a re-download of another checkpoint.
Its 262k-token embedding is two thirds of the file (Q8_0, 178 MB); a GPU call carries 64 MiB, so
`pack` keeps only the rows of the tokens the training and held-out texts use (the embedding is tied
to the output layer: the kept rows are the output vocabulary too). The transformer blocks travel as
their raw quantised bytes and are dequantised where they train.

  python -m ambigqa_train.lm_base pack --gguf gemma-3-270m-q4_k_m.gguf --vocab kept.npy --out DIR --parts 2

The unpacked weights equal what transformers' own GGUF loader makes of the file (checked once,
2026-11-26, every tensor bit for bit); train/tests/test_lm_adapter.py checks the mapping on a tiny GGUF.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

# GGUF's per-layer tensor names → transformers' Gemma3 module names.
_NAME_MAP = {
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
    "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
    "attn_norm": "input_layernorm", "post_attention_norm": "post_attention_layernorm",
    "ffn_norm": "pre_feedforward_layernorm", "post_ffw_norm": "post_feedforward_layernorm",
}


def hf_name(gguf_name: str) -> str:
    """GGUF tensor name → transformers' Gemma3ForCausalLM state-dict name."""
    if gguf_name == "token_embd.weight":
        return "model.embed_tokens.weight"
    if gguf_name == "output_norm.weight":
        return "model.norm.weight"
    _, layer, kind, suffix = gguf_name.split(".")
    return f"model.layers.{layer}.{_NAME_MAP[kind]}.{suffix}"


def is_norm(hf: str) -> bool:
    return hf.endswith("norm.weight")


def _field(reader: Any, key: str) -> Any:
    f = reader.fields[key]
    v = f.parts[f.data[0]]
    return bytes(v).decode() if f.types[0].name == "STRING" else v.tolist()[0]


def gemma3_config(reader: Any, vocab_size: int) -> dict[str, Any]:
    """transformers' Gemma3TextConfig kwargs from the GGUF metadata (4.x and 5.x both read them),
    written beside the packed tensors so that the machine that trains needs no GGUF loader."""
    a = "gemma3"
    layers = int(_field(reader, f"{a}.block_count"))
    pattern = 6  # every sixth layer attends globally (Gemma 3)
    return {
        "model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"],
        "vocab_size": vocab_size,
        "hidden_size": int(_field(reader, f"{a}.embedding_length")),
        "intermediate_size": int(_field(reader, f"{a}.feed_forward_length")),
        "num_hidden_layers": layers,
        "num_attention_heads": int(_field(reader, f"{a}.attention.head_count")),
        "num_key_value_heads": int(_field(reader, f"{a}.attention.head_count_kv")),
        "head_dim": int(_field(reader, f"{a}.attention.key_length")),
        "query_pre_attn_scalar": int(_field(reader, f"{a}.attention.key_length")),
        "rms_norm_eps": float(_field(reader, f"{a}.attention.layer_norm_rms_epsilon")),
        "rope_theta": float(_field(reader, f"{a}.rope.freq_base")),
        "rope_local_base_freq": 10000.0,
        "sliding_window": int(_field(reader, f"{a}.attention.sliding_window")),
        "layer_types": ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(layers)],
        "max_position_embeddings": int(_field(reader, f"{a}.context_length")),
        "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True,
        "final_logit_softcapping": None, "attn_logit_softcapping": None,
        "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0,
    }


def dequantize(raw: np.ndarray, qtype: int, shape: tuple[int, ...]) -> np.ndarray:
    """One tensor's raw GGUF bytes → float32 in PyTorch's (out, in) order."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize as dq
    out = dq(raw, GGMLQuantizationType(qtype)).astype(np.float32)
    return out.reshape(shape)


def pack(gguf: Path, vocab: np.ndarray, out: Path, parts: int) -> dict[str, Any]:
    """Raw quantised tensors (the embedding's kept rows only) into `parts` .npz files of about equal
    size, plus config.json. Norms keep GGUF's (1 + w) form; `load_state_dict` subtracts the 1."""
    from gguf import GGUFReader
    reader = GGUFReader(str(gguf))
    vocab = np.asarray(vocab, dtype=np.int64)
    out.mkdir(parents=True, exist_ok=True)
    tensors: list[tuple[str, dict[str, np.ndarray]]] = []
    for t in reader.tensors:
        raw = np.asarray(t.data)
        shape = tuple(int(x) for x in reversed(t.shape.tolist()))  # GGUF lists the fastest axis first
        if t.name == "token_embd.weight":
            raw = raw.reshape(shape[0], -1)[vocab]
            shape = (len(vocab), shape[1])
        tensors.append((hf_name(t.name), {"raw": np.ascontiguousarray(raw).view(np.uint8).reshape(-1),
                                          "qtype": np.array(int(t.tensor_type)), "shape": np.array(shape)}))
    total = sum(v["raw"].nbytes for _, v in tensors)
    buckets: list[dict[str, np.ndarray]] = [{} for _ in range(parts)]
    sizes = [0] * parts
    for name, v in sorted(tensors, key=lambda x: -x[1]["raw"].nbytes):  # largest first, into the lightest part
        i = sizes.index(min(sizes))
        sizes[i] += v["raw"].nbytes
        for k, a in v.items():
            buckets[i][f"{name}|{k}"] = a
    for i, b in enumerate(buckets):
        np.savez(out / f"base-{i}.npz", **b)
    config = gemma3_config(reader, len(vocab))
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    return {"bytes": total, "parts": sizes, "vocab": len(vocab)}


def load_state_dict(folder: Path) -> dict[str, Any]:
    """The packed parts → a float32 state dict for Gemma3ForCausalLM (norms as transformers keeps them)."""
    import torch
    sd: dict[str, Any] = {}
    for p in sorted(folder.glob("base-*.npz")):
        z = np.load(p)
        for key in z.files:
            name, field = key.split("|")
            if field != "raw":
                continue
            w = dequantize(z[key], int(z[f"{name}|qtype"]), tuple(int(x) for x in z[f"{name}|shape"]))
            t = torch.from_numpy(np.ascontiguousarray(w))
            sd[name] = t - 1.0 if is_norm(name) else t
    return sd


def build_model(folder: Path, device: str = "cpu") -> Any:
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig
    config = Gemma3TextConfig(**json.loads((folder / "config.json").read_text()))
    config._attn_implementation = "sdpa"
    model = Gemma3ForCausalLM(config)
    sd = load_state_dict(folder)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [m for m in missing if m != "lm_head.weight"]  # tied to the embedding
    if missing or unexpected:
        raise ValueError(f"base weights do not fit Gemma3ForCausalLM: missing {missing[:5]}, unexpected {unexpected[:5]}")
    model.tie_weights()
    return model.to(torch.device(device))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.lm_base")
    ap.add_argument("command", choices=["pack"])
    ap.add_argument("--gguf", type=Path, required=True)
    ap.add_argument("--vocab", type=Path, required=True, help=".npy of the kept token ids (sorted)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--parts", type=int, default=2)
    a = ap.parse_args(argv)
    print(json.dumps(pack(a.gguf, np.load(a.vocab), a.out, a.parts)))


if __name__ == "__main__":
    main()
