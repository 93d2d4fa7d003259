"""Train the MiniLM cross-encoder (one logit) from a config file and a seed.

`python -m ambigqa_train.train_reranker --config train/configs/reranker-tiny.json --seed 0`
Config keys: out, train_file, limit, max_len, batch_size, lr, warmup, steps, log_every, save_every,
device (cpu, cuda or auto, default cpu; --device overrides it: on CUDA fp32 with TF32 matmuls);
optional: warm_start ("minilm", or "extractive:<folder>": the shipped extractive reader), sets (only
rows whose `set` is one of them), pos_weight (weight of a positive pair in the loss), freeze_layers
(the embeddings and that many bottom layers not trained).

Two kinds of train_file:
- pairs (reranker-train.jsonl: question, title, text, label): binary cross-entropy per pair;
- groups (reranker-groups-train.jsonl: question, positive, negatives): softmax cross-entropy over
  the positive and its BM25 hard negatives (a listwise loss, as rerankers are used: to order the
  passages of one question). batch_size counts groups; `negatives` caps the negatives per group.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
from transformers import BertForSequenceClassification, PreTrainedTokenizerFast

from .common import add_device_argument, device_of, load_config, read_jsonl, run_steps, setup, to_device
from .warm_start import build_cross_encoder, cross_encoder_from_extractive


def as_pairs(group: dict[str, Any], negatives: int | None) -> list[dict[str, Any]]:
    """The positive first, then the negatives: the listwise target is index 0."""
    passages = [group["positive"], *group["negatives"][:negatives]]
    return [{"question": group["question"], "title": p["title"], "text": p["text"]} for p in passages]


def encode(tok: PreTrainedTokenizerFast, batch: list[dict[str, Any]], max_len: int) -> dict[str, torch.Tensor]:
    enc = tok([r["question"] for r in batch], [f"{r['title']}: {r['text']}" for r in batch],
              max_length=max_len, truncation="only_second", padding=True, return_tensors="pt")
    return dict(enc)


def train(cfg: dict[str, Any], seed: int) -> dict[str, Any]:
    device = device_of(cfg)
    setup(seed)
    ckpt = Path(cfg["out"]) / f"seed-{seed}" / "checkpoint"
    rows = read_jsonl(Path(cfg["train_file"]), cfg.get("limit"))
    # Pairs of some folds only (verifier pairs carry their tuning set; train_verifier trains fold by fold).
    if "sets" in cfg:
        rows = [r for r in rows if r.get("set") in cfg["sets"]]
    if not rows:
        raise SystemExit(f"train: {cfg['train_file']} holds no training rows (sets: {cfg.get('sets', 'all')})")
    # warm_start: MiniLM (the default), or "extractive:<folder>", the shipped reader (the answer verifier's).
    warm = str(cfg.get("warm_start", "minilm"))
    model, tok = cross_encoder_from_extractive(Path(warm.split(":", 1)[1])) if warm.startswith("extractive:") else build_cross_encoder(seed)
    state: dict[str, Any] = {"step": 0}
    if (ckpt / "state.pt").exists():
        model = BertForSequenceClassification.from_pretrained(str(ckpt))
        state = torch.load(ckpt / "state.pt", weights_only=False, map_location="cpu")
        print(f"train: resuming {ckpt} at step {state['step']}")
    # freeze_layers n: the embeddings and the first n layers keep their weights (a small training
    # set adapts the top; backward stops below them, so a step costs about a third less at n = 6).
    frozen = int(cfg.get("freeze_layers", 0))
    if frozen:
        for module in [model.bert.embeddings, *model.bert.encoder.layer[:frozen]]:
            module.requires_grad_(False)
    model.to(device)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=cfg["lr"], weight_decay=0.01)
    if "optimizer" in state:
        opt.load_state_dict(state["optimizer"])
    model.train()
    lossf = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(float(cfg.get("pos_weight", 1.0)), device=device))
    grouped = "positive" in rows[0]

    def loss_of(batch: list[dict[str, Any]]) -> torch.Tensor:
        if grouped:
            groups = [as_pairs(g, cfg.get("negatives")) for g in batch]
            width = min(len(g) for g in groups)
            pairs = [p for g in groups for p in g[:width]]
            logits = model(**to_device(encode(tok, pairs, cfg["max_len"]), device)).logits.view(len(groups), width)
            return torch.nn.functional.cross_entropy(logits, torch.zeros(len(groups), dtype=torch.long, device=device))
        logits = model(**to_device(encode(tok, batch, cfg["max_len"]), device)).logits.squeeze(-1)
        return lossf(logits, torch.tensor([float(r["label"]) for r in batch], device=device))

    return run_steps(model, tok, opt, rows, cfg, seed, int(state["step"]), ckpt, loss_of, "groups_per_s" if grouped else "pairs_per_s")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.train_reranker")
    ap.add_argument("--config", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    add_device_argument(ap)
    a = ap.parse_args(argv)
    cfg = load_config(a.config, a.device)
    print(json.dumps(train(cfg, a.seed)))


if __name__ == "__main__":
    main()
