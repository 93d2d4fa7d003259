"""Train the MiniLM cross-encoder (one logit, binary cross-entropy) from a config file and a seed.

`python -m ambigqa_train.train_reranker --config train/configs/reranker-tiny.json --seed 0`
Config keys: out, train_file, limit, max_len, batch_size, lr, warmup, steps, log_every, save_every.
"""
from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import torch
from transformers import BertForSequenceClassification, PreTrainedTokenizerFast

from .common import batches, load_config, lr_at, read_jsonl, setup
from .warm_start import build_cross_encoder


def encode(tok: PreTrainedTokenizerFast, batch: list[dict[str, Any]], max_len: int) -> dict[str, torch.Tensor]:
    enc = tok([r["question"] for r in batch], [f"{r['title']}: {r['text']}" for r in batch],
              max_length=max_len, truncation="only_second", padding=True, return_tensors="pt")
    return dict(enc)


def train(cfg: dict[str, Any], seed: int) -> dict[str, float]:
    setup(seed)
    ckpt = Path(cfg["out"]) / f"seed-{seed}" / "checkpoint"
    rows = read_jsonl(Path(cfg["train_file"]), cfg.get("limit"))
    model, tok = build_cross_encoder(seed)
    state: dict[str, Any] = {"step": 0}
    if (ckpt / "state.pt").exists():
        model = BertForSequenceClassification.from_pretrained(str(ckpt))
        state = torch.load(ckpt / "state.pt", weights_only=False)
        print(f"train: resuming {ckpt} at step {state['step']}")
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=0.01)
    if "optimizer" in state:
        opt.load_state_dict(state["optimizer"])
    model.train()
    lossf = torch.nn.BCEWithLogitsLoss()
    steps, step = int(cfg["steps"]), int(state["step"])
    log_every, save_every = cfg.get("log_every", 10), cfg.get("save_every", 200)
    t0, seen, loss_sum, n_loss, last = time.time(), 0, 0.0, 0, float("nan")
    stream = batches(rows, cfg["batch_size"], seed, step)
    while step < steps:
        batch = next(stream)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, cfg["lr"], cfg.get("warmup", 0), steps)
        logits = model(**encode(tok, batch, cfg["max_len"])).logits.squeeze(-1)
        loss = lossf(logits, torch.tensor([float(r["label"]) for r in batch]))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        seen += len(batch)
        loss_sum += loss.item()
        n_loss += 1
        if step % log_every == 0 or step == steps:
            last = loss_sum / n_loss
            print(json.dumps({"step": step, "loss": round(last, 4), "pairs_per_s": round(seen / (time.time() - t0), 2)}), flush=True)
            loss_sum, n_loss = 0.0, 0
        if step % save_every == 0 or step == steps:
            tmp = ckpt.with_name("checkpoint.tmp")
            tmp.mkdir(parents=True, exist_ok=True)
            model.save_pretrained(str(tmp))
            tok.save_pretrained(str(tmp))
            torch.save({"step": step, "optimizer": opt.state_dict()}, tmp / "state.pt")
            if ckpt.exists():
                shutil.rmtree(ckpt)
            tmp.rename(ckpt)
    return {"step": step, "loss": last, "pairs_per_s": seen / max(1e-9, time.time() - t0)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.train_reranker")
    ap.add_argument("--config", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    print(json.dumps(train(load_config(a.config), a.seed)))


if __name__ == "__main__":
    main()
