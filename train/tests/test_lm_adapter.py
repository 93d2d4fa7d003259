"""The pretrained decoder's path on a tiny GGUF written here (one Gemma 3 layer, real quantisation
types): packing keeps the embedding's chosen rows and GGUF's raw bytes, unpacking gives the weights
transformers builds a model from (norms as (1 + w) in GGUF, w in PyTorch), LoRA starts equal to the
base and learns, and the adapter converts to llama.cpp's GGUF LoRA names and shapes."""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

gguf = pytest.importorskip("gguf")

from ambigqa_train import lm_adapter_gguf, lm_base, train_lm_adapter  # noqa: E402

HIDDEN, HEADS, KV, HEAD_DIM, FFN, VOCAB = 64, 2, 1, 32, 128, 40


def write_tiny_gguf(path: Path, seed: int = 0) -> dict[str, np.ndarray]:
    """A one-layer Gemma 3 GGUF; returns each tensor's float values as GGUF stores them."""
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), "gemma3")
    for key, value in {"block_count": 1, "embedding_length": HIDDEN, "feed_forward_length": FFN, "context_length": 512,
                       "attention.head_count": HEADS, "attention.head_count_kv": KV, "attention.key_length": HEAD_DIM,
                       "attention.value_length": HEAD_DIM, "attention.sliding_window": 64}.items():
        w.add_uint32(f"gemma3.{key}", value)
    w.add_float32("gemma3.attention.layer_norm_rms_epsilon", 1e-6)
    w.add_float32("gemma3.rope.freq_base", 1e6)
    shapes = {"token_embd.weight": (VOCAB, HIDDEN), "output_norm.weight": (HIDDEN,),
              "blk.0.attn_q.weight": (HEADS * HEAD_DIM, HIDDEN), "blk.0.attn_k.weight": (KV * HEAD_DIM, HIDDEN),
              "blk.0.attn_v.weight": (KV * HEAD_DIM, HIDDEN), "blk.0.attn_output.weight": (HIDDEN, HEADS * HEAD_DIM),
              "blk.0.attn_q_norm.weight": (HEAD_DIM,), "blk.0.attn_k_norm.weight": (HEAD_DIM,),
              "blk.0.ffn_gate.weight": (FFN, HIDDEN), "blk.0.ffn_up.weight": (FFN, HIDDEN), "blk.0.ffn_down.weight": (HIDDEN, FFN),
              "blk.0.attn_norm.weight": (HIDDEN,), "blk.0.post_attention_norm.weight": (HIDDEN,),
              "blk.0.ffn_norm.weight": (HIDDEN,), "blk.0.post_ffw_norm.weight": (HIDDEN,)}
    values: dict[str, np.ndarray] = {}
    for name, shape in shapes.items():
        x = (rng.standard_normal(shape) * (0.1 if len(shape) == 2 else 0.05) + (1.0 if len(shape) == 1 else 0.0)).astype(np.float32)
        qtype = gguf.GGMLQuantizationType.Q8_0 if name in ("token_embd.weight", "blk.0.ffn_up.weight") else \
            gguf.GGMLQuantizationType.Q5_0 if name == "blk.0.attn_q.weight" else gguf.GGMLQuantizationType.F32
        if qtype == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, x)
            values[name] = x
        else:
            q = gguf.quants.quantize(x, qtype)
            w.add_tensor(name, q, raw_dtype=qtype)
            values[name] = gguf.quants.dequantize(q, qtype).reshape(shape)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return values


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray], np.ndarray]:
    d = tmp_path_factory.mktemp("lm")
    values = write_tiny_gguf(d / "tiny.gguf")
    vocab = np.array([0, 1, 2, 3, 5, 8, 13, 21, 34], dtype=np.int64)
    stats = lm_base.pack(d / "tiny.gguf", vocab, d / "pack", parts=2)
    assert stats["vocab"] == len(vocab) and len(stats["parts"]) == 2 and min(stats["parts"]) > 0
    return d / "pack", values, vocab


def test_pack_keeps_the_chosen_embedding_rows_and_unpacks_to_transformers_form(packed: tuple[Path, dict[str, np.ndarray], np.ndarray]) -> None:
    pack, values, vocab = packed
    sd = lm_base.load_state_dict(pack)
    assert len(sd) == len(values)
    np.testing.assert_array_equal(sd["model.embed_tokens.weight"].numpy(), values["token_embd.weight"][vocab])
    np.testing.assert_array_equal(sd["model.layers.0.self_attn.q_proj.weight"].numpy(), values["blk.0.attn_q.weight"])
    np.testing.assert_array_equal(sd["model.layers.0.mlp.up_proj.weight"].numpy(), values["blk.0.ffn_up.weight"])
    # GGUF keeps Gemma's norms as (1 + w); transformers' Gemma3RMSNorm adds the 1 itself.
    np.testing.assert_allclose(sd["model.layers.0.input_layernorm.weight"].numpy(), values["blk.0.attn_norm.weight"] - 1.0)
    config = json.loads((pack / "config.json").read_text())
    assert config["vocab_size"] == len(vocab) and config["num_hidden_layers"] == 1 and config["head_dim"] == HEAD_DIM


def examples(n: int, seed: int = 0) -> list[dict[str, object]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        forced = rng.randrange(4, 9)  # the target is a function of the forced token: learnable
        rows.append({"id": f"x:{i}", "task": "qd", "split": "train" if i < n - 2 else "heldout", "prefix": [2, 4, 5],
                     "steps": [{"forced": [forced], "target": [forced, 3, forced, 1], "text": "t"}]})
    return rows


def test_lora_starts_equal_to_the_base_then_learns_and_converts_to_llama_cpp_names(packed: tuple[Path, dict[str, np.ndarray], np.ndarray], tmp_path: Path) -> None:
    pack, _, _ = packed
    model = lm_base.build_model(pack)
    ids = torch.tensor([[2, 4, 5, 6, 7]])
    with torch.no_grad():
        before = model(input_ids=ids).logits
    run = {"name": "t", "task": "qd", "rank": 4, "alpha": 8, "dropout": 0.0, "lr": 1e-2, "epochs": 30, "max_len": 64,
           "tokens_per_batch": 256, "seed": 1}
    rows = examples(24)
    logs: list[str] = []
    wrapped, stats = train_lm_adapter.train_run(model, run, rows, torch.device("cpu"), logs.append, budget_s=60)
    assert len(wrapped) == 7 and stats["steps"] > 0 and stats["examples"] == 22
    # B starts at zero: the wrapped model computed what the base did before training.
    model.eval()
    for w in wrapped.values():
        w.lora_B.data.zero_()
    with torch.no_grad():
        torch.testing.assert_close(model(input_ids=ids).logits, before)
    model2 = lm_base.build_model(pack)
    untrained = train_lm_adapter.heldout_loss(model2, rows, run, torch.device("cpu"))
    wrapped2, _ = train_lm_adapter.train_run(model2, run, rows, torch.device("cpu"), logs.append, budget_s=60)
    trained = train_lm_adapter.heldout_loss(model2, rows, run, torch.device("cpu"))
    assert trained < untrained / 3, f"held-out loss {untrained} → {trained}"
    gen = train_lm_adapter.generate(model2, rows, "qd", [1], torch.device("cpu"), max_new=8)
    assert len(gen) == 2 and all(len(g["generated"]) == 1 and 0 < len(g["generated"][0]) <= 8 for g in gen)

    from safetensors.torch import save_file
    save_file(train_lm_adapter.adapter_tensors(wrapped2), str(tmp_path / "a.safetensors"), metadata={"rank": "4", "alpha": "8", "task": "qd"})
    info = lm_adapter_gguf.convert(tmp_path / "a.safetensors", tmp_path / "a.gguf")
    assert info["modules"] == 7 and info["rank"] == 4
    reader = gguf.GGUFReader(str(tmp_path / "a.gguf"))
    shapes = {t.name: tuple(int(x) for x in t.shape) for t in reader.tensors}
    # GGUF lists the fastest axis first: lora_a is (in, rank), lora_b (rank, out), as llama.cpp checks.
    assert shapes["blk.0.attn_q.weight.lora_a"] == (HIDDEN, 4)
    assert shapes["blk.0.attn_q.weight.lora_b"] == (4, HEADS * HEAD_DIM)
    assert shapes["blk.0.ffn_down.weight.lora_a"] == (FFN, 4)
    f = reader.fields["adapter.lora.alpha"]
    assert float(f.parts[f.data[0]][0]) == 8.0


def test_gguf_names_map_both_ways() -> None:
    assert lm_base.hf_name("blk.3.attn_output.weight") == "model.layers.3.self_attn.o_proj.weight"
    assert lm_adapter_gguf.gguf_name("model.layers.3.self_attn.o_proj") == "blk.3.attn_output.weight"
    assert lm_adapter_gguf.gguf_name("model.layers.17.mlp.gate_proj") == "blk.17.ffn_gate.weight"
