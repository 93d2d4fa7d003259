"""Train the extractive reader (`extractive.py`) from a config file and a seed, and measure it.

`python -m ambigqa_train.train_extractive train --config train/configs/extractive.json --seed 0`
`python -m ambigqa_train.train_extractive eval <checkpoint> [--data heldout.jsonl] [--n 300]`
`python -m ambigqa_train.train_extractive warm --encoder all-mpnet-base-v2 --out DIR [--seed 0]`
(the reader on a pretrained encoder, heads fresh, saved as a checkpoint: what travels to a GPU
machine as init_checkpoint)

Config keys: out, warm_start (a folder name under models/encoders, fetched by scripts/assets: the
BERT encoders e5-small-v2, bge-small-en-v1.5, all-minilm-l6-v2 recovered from their fp32 ONNX
graphs, or all-mpnet-base-v2, MPNet-base's safetensors, for the base-size reader), train_file
(reader-groups-train.jsonl), limit, nq_repeat (NQ-open groups repeated: their questions are AmbigNQ's kind, SQuAD's are not),
max_len, words (each passage cut to this many words, as serving reads 100-word passages),
negatives, batch_size (groups), lr, warmup, steps, log_every, save_every; init_quantized (instead
of warm_start: an exported reader folder whose int8 model_quantized.onnx is dequantised and trained
on, e.g. assets/models/extractive); init_checkpoint (instead of either: a reader checkpoint folder,
e.g. the warm start `weight_parts join` rebuilt on a GPU machine); max_seconds (stop, saved, after
this many seconds of steps: a device call's limit; a rerun resumes); device (cpu, cuda or auto;
--device overrides it); workers (DataLoader processes that tokenise the next batches while the
model trains on this one; 0 does it in line).
"""
from __future__ import annotations

import argparse
import functools
import json
import random
import shutil
import time
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModel, PreTrainedModel, PreTrainedTokenizerFast

from .common import add_device_argument, device_of, load_config, read_jsonl, run_steps, setup
from .extractive import best_spans, encode, from_encoder, from_quantized_onnx, group_passages, group_title_lengths, load_checkpoint, prepare_groups, prepared_loss, with_reader_inputs
from .onnx_weights import ENCODERS_DIR, recover_bert


def training_rows(cfg: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    rows = read_jsonl(Path(cfg["train_file"]), cfg.get("limit"))
    repeat = int(cfg.get("nq_repeat", 1))
    rows = [r for r in rows for _ in range(repeat if r["source"] == "nq-gold" else 1)]
    random.Random(seed).shuffle(rows)
    return rows


def warm_encoder(name: str) -> tuple[PreTrainedModel, PreTrainedTokenizerFast]:
    """A pretrained encoder from models/encoders: from its safetensors where it has them (MPNet),
    else BERT recovered from its ONNX graph."""
    folder = ENCODERS_DIR / name
    if (folder / "model.safetensors").exists():
        encoder = AutoModel.from_pretrained(str(folder), add_pooling_layer=False)
        return encoder, PreTrainedTokenizerFast.from_pretrained(str(folder))
    return recover_bert(name)  # its error names the scripts/assets command when the folder is missing


def warm_reader(name: str, seed: int) -> tuple[PreTrainedModel, PreTrainedTokenizerFast]:
    """The reader on encoder `name`, its heads fresh (seeded)."""
    encoder, tok = warm_encoder(name)
    model = from_encoder(encoder, seed)
    return model, with_reader_inputs(tok, model.config)


def save_warm(name: str, out: Path, seed: int) -> None:
    model, tok = warm_reader(name, seed)
    tmp = out.with_name(out.name + ".tmp")
    model.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)


def train(cfg: dict[str, Any], seed: int) -> dict[str, Any]:
    setup(seed)
    ckpt = Path(cfg["out"]) / f"seed-{seed}" / "checkpoint"
    rows = training_rows(cfg, seed)
    state: dict[str, Any] = {"step": 0}
    device = device_of(cfg)
    if (ckpt / "state.pt").exists():
        model, tok = load_checkpoint(ckpt)
        state = torch.load(ckpt / "state.pt", weights_only=False, map_location="cpu")
        print(f"train: resuming {ckpt} at step {state['step']}", flush=True)
    elif cfg.get("init_quantized"):
        model, tok = from_quantized_onnx(Path(cfg["init_quantized"]))
    elif cfg.get("init_checkpoint"):
        model, tok = load_checkpoint(Path(cfg["init_checkpoint"]))
    else:
        model, tok = warm_reader(cfg["warm_start"], seed)
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=0.01)
    if "optimizer" in state:
        opt.load_state_dict(state["optimizer"])
    model.train()
    negatives, max_len, words = int(cfg["negatives"]), int(cfg["max_len"]), int(cfg.get("words", 100))
    return run_steps(model, tok, opt, rows, cfg, seed, int(state["step"]), ckpt, lambda batch: prepared_loss(model, batch), "groups_per_s",
                     prepare=functools.partial(prepare_groups, tok, negatives=negatives, max_len=max_len, words=words))


def normalize(s: str) -> str:
    import string
    import re

    s = "".join(c for c in s.lower() if c not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


@torch.no_grad()
def evaluate(ckpt: Path, data: Path, n: int, max_len: int = 256, words: int = 100) -> dict[str, float]:
    """On held-out groups: exact match of the best span on the gold passage alone, among the gold
    passage and 2 hard negatives, and among all of the group's; selection accuracy of the group."""
    torch.set_num_threads(2)
    model, tok = load_checkpoint(ckpt)
    model.eval()
    groups = read_jsonl(data, n)
    hits = {"em_gold": 0, "em_gold_2neg": 0, "em_group": 0, "selection": 0}
    t0 = time.time()
    for g in groups:
        texts, _ = group_passages(g, 3, words)
        titles = group_title_lengths(g, 3)
        enc = encode(tok, [g["question"]] * len(texts), texts, max_len)
        start, end, relevance = model(**enc.features)
        gold = {normalize(a) for a in g["answers"]}
        for key, k in (("em_gold", 1), ("em_gold_2neg", 3), ("em_group", len(texts))):
            sub = encode_slice(enc, k)
            spans = best_spans(sub, start[:k], end[:k], relevance[:k], top=1, title_lengths=titles[:k])
            hits[key] += bool(spans) and normalize(spans[0].text) in gold
        hits["selection"] += int(relevance.argmax()) == 0
    out = {k: round(100 * v / max(1, len(groups)), 1) for k, v in hits.items()}
    out["n"] = len(groups)
    out["seconds"] = round(time.time() - t0, 1)
    return out


def encode_slice(enc: Any, k: int) -> Any:
    from .extractive import Encoded

    return Encoded({key: v[:k] for key, v in enc.features.items()}, enc.span_mask[:k], enc.word_start[:k], enc.word_end[:k], enc.offsets[:k], enc.texts[:k])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.train_extractive")
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--config", type=Path, required=True)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--stop-at", type=int, help="stop after this step (the schedule stays the config's)")
    add_device_argument(t)
    w = sub.add_parser("warm")
    w.add_argument("--encoder", required=True, help="a folder name under models/encoders")
    w.add_argument("--out", type=Path, required=True)
    w.add_argument("--seed", type=int, default=0)
    e = sub.add_parser("eval")
    e.add_argument("checkpoint", type=Path)
    e.add_argument("--data", type=Path, default=Path("data/train/reranker-groups-heldout.jsonl"))
    e.add_argument("--n", type=int, default=300)
    a = ap.parse_args(argv)
    if a.cmd == "train":
        cfg = load_config(a.config, a.device)
        if a.stop_at is not None:
            cfg["stop_at"] = a.stop_at
        print(json.dumps(train(cfg, a.seed)))
    elif a.cmd == "warm":
        save_warm(a.encoder, a.out, a.seed)
        print(f"warm start: the reader on {a.encoder} in {a.out}")
    else:
        print(json.dumps(evaluate(a.checkpoint, a.data, a.n)))


if __name__ == "__main__":
    main()
