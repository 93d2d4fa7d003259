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


# --- checkpoint and resume -------------------------------------------------------------------------
# A run stopped and resumed (several times, across an epoch's end, with steps after the last
# checkpoint lost and redone) ends with the tensors of the same run uninterrupted: dropout on, so
# torch's generator matters as much as the batch order's.

RESUME_RUN = {"name": "r", "task": "qd", "rank": 4, "alpha": 8, "dropout": 0.1, "lr": 1e-2, "epochs": 3, "max_len": 64,
              "tokens_per_batch": 48, "seed": 5}


def lora_of(wrapped: dict[str, object]) -> dict[str, torch.Tensor]:
    return {f"{n}.{k}": getattr(w, f"lora_{k}").detach().clone() for n, w in wrapped.items() for k in ("A", "B")}


def test_a_stopped_run_resumes_to_the_uninterrupted_runs_tensors(packed: tuple[Path, dict[str, np.ndarray], np.ndarray], tmp_path: Path) -> None:
    import shutil

    from ambigqa_train import lm_resume
    pack, _, _ = packed
    rows = examples(24)
    cpu = torch.device("cpu")
    logs: list[str] = []
    straight, stats = train_lm_adapter.train_run(lm_base.build_model(pack), RESUME_RUN, rows, cpu, logs.append)
    per_epoch = stats["steps"] // RESUME_RUN["epochs"]
    assert per_epoch >= 4 and stats["steps"] == per_epoch * RESUME_RUN["epochs"] and not stats["stopped_early"]
    expected = lora_of(straight)
    assert all(float(t.abs().max()) > 0 for n, t in expected.items() if n.endswith(".B")), "training moved B off zero"

    ckpt = lm_resume.checkpoint_path(tmp_path, "r")
    early, late = per_epoch - 1, per_epoch + 2  # within the first epoch, then within the second
    with pytest.raises(train_lm_adapter.Stopped):
        train_lm_adapter.train_run(lm_base.build_model(pack), RESUME_RUN, rows, cpu, logs.append, resume=ckpt,
                                   checkpoint_s=1e9, should_stop=train_lm_adapter.StopRequest(at_step=early))
    kept = tmp_path / "kept.pt"
    shutil.copy(ckpt, kept)
    with pytest.raises(train_lm_adapter.Stopped):
        train_lm_adapter.train_run(lm_base.build_model(pack), RESUME_RUN, rows, cpu, logs.append, resume=ckpt,
                                   checkpoint_s=0, should_stop=train_lm_adapter.StopRequest(at_step=late))
    assert torch.load(ckpt, weights_only=True)["position"]["step"] == late
    # A kill after `early`'s checkpoint: the steps since are lost, and redone.
    shutil.copy(kept, ckpt)
    resumed, stats2 = train_lm_adapter.train_run(lm_base.build_model(pack), RESUME_RUN, rows, cpu, logs.append, resume=ckpt)
    assert any(f"resumed at step {early}/" in line for line in logs)
    assert stats2["steps"] == stats["steps"]
    got = lora_of(resumed)
    assert got.keys() == expected.keys() and len(got) == 14
    for n in expected:
        torch.testing.assert_close(got[n], expected[n], rtol=1e-5, atol=1e-6, msg=n)
    # Once trained, the checkpoint says so: a stop during generation resumes without training again.
    assert torch.load(ckpt, weights_only=True)["position"]["trained"]
    again, stats3 = train_lm_adapter.train_run(lm_base.build_model(pack), RESUME_RUN, rows, cpu, logs.append, resume=ckpt)
    assert "training done" in logs[-1] and stats3["steps"] == stats["steps"]
    for n, t in lora_of(again).items():
        torch.testing.assert_close(t, expected[n], rtol=0, atol=0)


def test_a_checkpoint_of_another_recipe_is_refused(packed: tuple[Path, dict[str, np.ndarray], np.ndarray], tmp_path: Path) -> None:
    from ambigqa_train import lm_resume
    pack, _, _ = packed
    rows = examples(24)
    ckpt = lm_resume.checkpoint_path(tmp_path, "r")
    with pytest.raises(train_lm_adapter.Stopped):
        train_lm_adapter.train_run(lm_base.build_model(pack), RESUME_RUN, rows, torch.device("cpu"), lambda _m: None,
                                   resume=ckpt, should_stop=train_lm_adapter.StopRequest(at_step=2))
    with pytest.raises(ValueError, match=r"another run \(run differ"):
        train_lm_adapter.train_run(lm_base.build_model(pack), dict(RESUME_RUN, lr=2e-2), rows, torch.device("cpu"),
                                   lambda _m: None, resume=ckpt)


def test_a_batch_in_pieces_gives_the_whole_batchs_loss_and_gradients(packed: tuple[Path, dict[str, np.ndarray], np.ndarray]) -> None:
    # What lets the CPU keep the recipe's 12,288-token batch within memory (config `micro_tokens`).
    pack, _, _ = packed
    rng = random.Random(3)
    batch = [train_lm_adapter.Example(f"x{i}", [2, *[rng.randrange(4, 9) for _ in range(n)]], [-100] * 3 + [rng.randrange(4, 9) for _ in range(n - 2)])
             for i, n in enumerate([5, 6, 6, 9, 11, 12])]
    grads, losses = [], []
    for micro in (10_000, 24):  # one piece; four
        model = lm_base.build_model(pack)
        wrapped = train_lm_adapter.add_lora(model, 4, 8, 0.0, seed=2)
        for w in wrapped.values():
            torch.nn.init.normal_(w.lora_B, std=0.1)  # B at zero gives A no gradient to compare
        model.train()
        loss, tokens = train_lm_adapter.accumulate(model, batch, micro, torch.device("cpu"))
        assert tokens == sum(len(e.ids) for e in batch)
        losses.append(float(loss))
        grads.append({f"{n}.{k}": getattr(w, f"lora_{k}").grad.clone() for n, w in wrapped.items() for k in ("A", "B")})
    assert losses[0] > 0 and abs(losses[0] - losses[1]) < 1e-5
    assert len(grads[0]) == 14 and all(float(g.abs().max()) > 0 for g in grads[0].values())
    for n, g in grads[0].items():
        torch.testing.assert_close(grads[1][n], g, rtol=1e-4, atol=1e-6, msg=n)


def full_pack(pack: Path, dest: Path) -> Path:
    """The fixture's packed base with what `prepare` adds beside it (vocabulary, stop ids, reference
    logits, the examples), for `train` end to end."""
    import shutil
    shutil.copytree(pack, dest)
    np.save(dest / "vocab.npy", np.array([0, 1, 2, 3, 5, 8, 13, 21, 34], dtype=np.int64))
    (dest / "stop-ids.json").write_text("[1]")
    (dest / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in examples(24)))
    ids = [2, 4, 5, 6]
    with torch.no_grad():
        logits = lm_base.build_model(dest)(input_ids=torch.tensor([ids])).logits[0].numpy()
    np.savez(dest / "reference.npz", ids=np.array(ids), logits=logits)
    return dest


def test_train_resumes_after_a_stop_and_skips_finished_runs(packed: tuple[Path, dict[str, np.ndarray], np.ndarray], tmp_path: Path) -> None:
    from safetensors.torch import load_file
    pack = full_pack(packed[0], tmp_path / "pack")
    config = {"threads": 2, "checkpoint_s": 0,
              "runs": [dict(RESUME_RUN, name="first", epochs=2, micro_tokens=24, heldout_limit=2),
                       dict(RESUME_RUN, name="second", epochs=2, seed=9, heldout_limit=2)]}
    train_lm_adapter.train(pack, config, tmp_path / "straight", "cpu", None)
    with pytest.raises(train_lm_adapter.Stopped):
        train_lm_adapter.train(pack, config, tmp_path / "stopped", "cpu", None, should_stop=train_lm_adapter.StopRequest(at_step=5))
    assert not (tmp_path / "stopped" / "adapter-first.safetensors").exists()
    assert (tmp_path / "stopped" / "checkpoint-first" / "state.pt").exists()
    train_lm_adapter.train(pack, config, tmp_path / "stopped", "cpu", None)
    for run in ("first", "second"):
        a = load_file(str(tmp_path / "straight" / f"adapter-{run}.safetensors"))
        b = load_file(str(tmp_path / "stopped" / f"adapter-{run}.safetensors"))
        assert a.keys() == b.keys() and len(a) == 14
        for k in a:
            torch.testing.assert_close(b[k], a[k], rtol=1e-3, atol=1e-4, msg=k)
        assert not (tmp_path / "stopped" / f"checkpoint-{run}").exists(), "a finished run leaves no checkpoint"
    summary = json.loads((tmp_path / "stopped" / "summary.json").read_text())
    assert [s["run"] for s in summary] == ["first", "second"] and all(s["steps"] > 0 for s in summary)
    # Run again: both are done, nothing is trained or rewritten.
    mtime = (tmp_path / "stopped" / "adapter-first.safetensors").stat().st_mtime_ns
    train_lm_adapter.train(pack, config, tmp_path / "stopped", "cpu", None)
    log = (tmp_path / "stopped" / "log.txt").read_text().splitlines()
    assert sum("skipped" in line for line in log[-3:]) == 2 and log[-1].endswith("done")
    assert (tmp_path / "stopped" / "adapter-first.safetensors").stat().st_mtime_ns == mtime
    assert json.loads((tmp_path / "stopped" / "summary.json").read_text()) == summary


def test_a_signal_stops_after_the_step_within_training_and_at_once_elsewhere() -> None:
    import os
    import signal
    stop = train_lm_adapter.StopRequest()
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        stop.install()
        stop.soft = True
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.asked and stop(1)
        stop.soft = False
        with pytest.raises(train_lm_adapter.Stopped, match="signal"):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # the handler runs between bytecodes, soon after the signal
                pass
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    assert not train_lm_adapter.StopRequest(at_step=3)(2) and train_lm_adapter.StopRequest(at_step=3)(3)


SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.mark.prerequisite(None if (SHARED / "splits/eval-300.txt").exists()
                          else f"needs {SHARED / 'splits/eval-300.txt'} (the shared data folder beside the project), which is absent")
def test_check_clean_refuses_a_second_set_question(tmp_path: Path) -> None:
    second = (Path(__file__).resolve().parents[1] / "splits" / "asqa-second.txt").read_text().split()
    assert len(second) == 324
    clean = {"id": "ambignq-train:1:0.0", "qid": "1", "question": "Who wrote a question nobody asked?"}
    for name in ("qd-train", "qd-heldout", "spanseqgen2-train", "spanseqgen2-heldout"):
        (tmp_path / f"{name}.jsonl").write_text(json.dumps(clean) + "\n")
    counts = train_lm_adapter.check_clean(tmp_path, SHARED)
    assert counts["qd-train"] == 1 and counts["held_out_ids"] == 624
    # lm-pack's examples, checked by the ids data build gave them.
    (tmp_path / "packed.jsonl").write_text(json.dumps({"id": "ambignq-train:1:0"}) + "\n")
    assert train_lm_adapter.check_clean(tmp_path, SHARED, tmp_path / "packed.jsonl")["packed"] == 1
    (tmp_path / "packed.jsonl").write_text(json.dumps({"id": f"asqa-dev:{second[1]}:0"}) + "\n")
    with pytest.raises(ValueError, match=f"packed:asqa-dev:{second[1]}:0"):
        train_lm_adapter.check_clean(tmp_path, SHARED, tmp_path / "packed.jsonl")
    (tmp_path / "spanseqgen2-train.jsonl").write_text(json.dumps(dict(clean, id=f"asqa-dev:{second[0]}", qid=second[0])) + "\n")
    with pytest.raises(ValueError, match=f"spanseqgen2-train:asqa-dev:{second[0]}"):
        train_lm_adapter.check_clean(tmp_path, SHARED)
