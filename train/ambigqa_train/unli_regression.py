"""UNLI's recipe (Chen et al. 2020, "Uncertain Natural Language Inference") as a yardstick for the
project's verifier: a cross-encoder reads `[CLS] premise [SEP] hypothesis [SEP]` and predicts the
subjective probability that the hypothesis is true, by regression (a sigmoid over one logit, mean
squared error onto the u-SNLI label), judged by Pearson r and MSE rather than by a label.

`python -m ambigqa_train.unli_regression --config train/configs/unli-e5.json --seed 0`
Config keys: out, data_dir, train_split, test_split, encoder, max_len, batch_size, lr, warmup,
epochs; optional: limit (rows of each split, for tests), save_every (steps between checkpoints),
stop_at (end early; the next run resumes), device (cpu, cuda or auto, default cpu; --device
overrides it: on CUDA fp32 with TF32 matmuls). A killed run resumes with the same command, on
either device (the checkpoint is read onto the CPU and moved).

The encoder is recovered from its fp32 ONNX graph (onnx_weights), mean-pooled as e5 is trained to
be, with a fresh linear head; one thread, so that it shares the machine.

`--frozen` is the cheap stand-in when fine-tuning does not fit the time (minutes instead of an
hour at one shared thread): the encoder's ONNX graph embeds premise and hypothesis apart
(e5's "query: " prefix, mean pooling, L2-normalised, as the server's dense encoder), and a
logistic regression over [u, v, |u - v|, u * v] is fit onto the probability (cross-entropy with the
soft label, UNLI's loss), its L2 strength chosen by 5-fold cross-validation on the training split.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from transformers import BertModel, PreTrainedTokenizerFast

from .common import add_device_argument, device_of, load_config, lr_at, model_device, to_device, write_atomic
from .onnx_weights import recover_bert


class Regressor(nn.Module):
    """The encoder, mean pooling over the real tokens, one logit; sigmoid gives the probability."""

    def __init__(self, bert: BertModel) -> None:
        super().__init__()
        self.bert = bert
        self.head = nn.Linear(bert.config.hidden_size, 1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
        return self.head(pooled).squeeze(-1)


def read_unli(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """u-SNLI rows: premise, hypothesis and the probability label `unli` in [0, 1]."""
    with path.open(newline="") as f:
        rows = [{"pre": r["pre"], "hyp": r["hyp"], "unli": float(r["unli"])} for r in csv.DictReader(f)]
    return rows[:limit] if limit is not None else rows


def encode(tok: PreTrainedTokenizerFast, batch: list[dict[str, Any]], max_len: int) -> dict[str, torch.Tensor]:
    enc = tok([r["pre"] for r in batch], [r["hyp"] for r in batch], max_length=max_len, truncation=True, padding=True, return_tensors="pt")
    return {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids")}


def predict(model: Regressor, tok: PreTrainedTokenizerFast, rows: list[dict[str, Any]], max_len: int, batch_size: int = 64) -> np.ndarray:
    model.eval()
    device = model_device(model)
    out: list[np.ndarray] = []
    with torch.no_grad():
        for i in range(0, len(rows), batch_size):
            out.append(torch.sigmoid(model(**to_device(encode(tok, rows[i : i + batch_size], max_len), device))).cpu().numpy())
    return np.concatenate(out) if out else np.zeros(0)


def scores(pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """UNLI's measures: Pearson r, Spearman rho and mean squared error."""
    from scipy.stats import pearsonr, spearmanr

    return {"pearson": float(pearsonr(pred, gold)[0]), "spearman": float(spearmanr(pred, gold)[0]), "mse": float(np.mean((pred - gold) ** 2))}


def train(cfg: dict[str, Any], seed: int, encoder: tuple[BertModel, PreTrainedTokenizerFast] | None = None) -> dict[str, Any] | None:
    """Fine-tunes and scores on the test split; None when `stop_at` ended the run early.

    Resumable: every `save_every` steps (and at `stop_at`) the model, optimizer, step and torch's
    random state go to checkpoint.pt atomically; a new run with the same config and seed goes on
    from there along the same batch order and dropout, so it ends as an uninterrupted run would.
    `encoder` replaces the ONNX-recovered one (tests use a tiny model)."""
    device = device_of(cfg)
    torch.set_num_threads(int(cfg.get("threads", 1)))
    random.seed(seed)
    torch.manual_seed(seed)
    data_dir = Path(cfg["data_dir"])
    rows = read_unli(data_dir / f"{cfg['train_split']}.csv", cfg.get("limit"))
    test = read_unli(data_dir / f"{cfg['test_split']}.csv", cfg.get("limit"))
    bert, tok = encoder if encoder is not None else recover_bert(cfg["encoder"])
    model = Regressor(bert).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=0.01)
    size, epochs = cfg["batch_size"], cfg["epochs"]
    per_epoch = max(1, len(rows) // size)
    total = epochs * per_epoch
    stop, save_every = min(total, int(cfg.get("stop_at", total))), int(cfg.get("save_every", 100))
    out = Path(cfg["out"]) / f"seed-{seed}"
    out.mkdir(parents=True, exist_ok=True)
    ckpt = out / "checkpoint.pt"
    step = 0
    # The trained-for config is kept with the checkpoint: another config starts afresh.
    # Nor is the device part of it: a run begun on a GPU may finish on a CPU.
    run_key = {k: v for k, v in cfg.items() if k not in ("stop_at", "save_every", "log_every", "threads", "device")}
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=False, map_location="cpu")
        if state["config"] == run_key:
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["optimizer"])
            torch.set_rng_state(state["rng"])
            if device.type == "cuda" and "cuda_rng" in state:
                # Dropout on the GPU draws from CUDA's generator, not the CPU's.
                torch.cuda.set_rng_state(state["cuda_rng"])
            step = state["step"]
            print(json.dumps({"resumed_at_step": step, "of": total}), flush=True)
        else:
            print(json.dumps({"restarted": "the checkpoint was made with another config"}), flush=True)
    t0, start = time.time(), step
    print(f"train: on {device.type}", flush=True)
    while step < stop:
        epoch, i = divmod(step, per_epoch)
        model.train()
        order = list(range(len(rows)))
        random.Random(seed * 1_000_003 + epoch).shuffle(order)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, cfg["lr"], cfg.get("warmup", 0), total)
        batch = [rows[j] for j in order[i * size : (i + 1) * size]]
        pred = torch.sigmoid(model(**to_device(encode(tok, batch, cfg["max_len"]), device)))
        loss = nn.functional.mse_loss(pred, torch.tensor([r["unli"] for r in batch], device=device))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        if step % cfg.get("log_every", 50) == 0:
            rate = (step - start) * size / (time.time() - t0)
            print(json.dumps({"epoch": epoch, "step": step, "of": total, "loss": round(loss.item(), 4), "examples_per_s": round(rate, 2),
                              "eta_s": round((total - step) * size / max(1e-9, rate))}), flush=True)
        if step % save_every == 0 or step == stop:
            tmp = ckpt.with_name(ckpt.name + ".tmp")
            extra = {"cuda_rng": torch.cuda.get_rng_state()} if device.type == "cuda" else {}
            torch.save({"config": run_key, "step": step, "model": model.state_dict(), "optimizer": opt.state_dict(), "rng": torch.get_rng_state(),
                        "device": device.type, "loss": loss.item(), **extra}, tmp)
            os.replace(tmp, ckpt)
    if step < total:
        return None
    pred = predict(model, tok, test, cfg["max_len"])
    result = {"train_rows": len(rows), "test_rows": len(test), "steps": step, "train_seconds": round(time.time() - t0),
              "test": scores(pred, np.array([r["unli"] for r in test])), "seed": seed, "device": device.type}
    write_atomic(out / "metrics.json", json.dumps(result, indent=2) + "\n")
    return result


def embed(name: str, texts: list[str], threads: int) -> np.ndarray:
    """e5's query embeddings by the encoder's ONNX graph (models/encoders/<name>)."""
    import onnxruntime as ort

    from .onnx_weights import encoder_dir, load_tokenizer

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(encoder_dir(name) / "model.onnx"), options, providers=["CPUExecutionProvider"])
    tok = load_tokenizer(name)
    out = []
    for i in range(0, len(texts), 64):
        enc = tok([f"query: {t}" for t in texts[i : i + 64]], padding=True, truncation=True, max_length=128, return_tensors="np")
        feeds = {x.name: enc[x.name].astype(np.int64) for x in session.get_inputs()}
        hidden = session.run(None, feeds)[0]
        mask = feeds["attention_mask"][..., None]
        pooled = (hidden * mask).sum(1) / mask.sum(1)
        out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
    return np.concatenate(out)


def pair_features(name: str, rows: list[dict[str, Any]], threads: int) -> np.ndarray:
    u = embed(name, [r["pre"] for r in rows], threads)
    v = embed(name, [r["hyp"] for r in rows], threads)
    return np.concatenate([u, v, np.abs(u - v), u * v], axis=1)


def frozen(cfg: dict[str, Any], seed: int) -> dict[str, Any]:
    """A soft-label logistic regression over frozen pair embeddings (see the module's docstring)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold

    t0 = time.time()
    data_dir, threads, name = Path(cfg["data_dir"]), int(cfg.get("threads", 1)), cfg.get("frozen_encoder", cfg["encoder"])
    rows = read_unli(data_dir / f"{cfg['train_split']}.csv", cfg.get("limit"))
    test = read_unli(data_dir / f"{cfg['test_split']}.csv", cfg.get("limit"))
    x, xt = pair_features(name, rows, threads), pair_features(name, test, threads)
    y = np.array([r["unli"] for r in rows])

    def fit(xs: np.ndarray, ys: np.ndarray, c: float) -> LogisticRegression:
        # The soft label as two weighted rows, one per class: the cross-entropy of a probability target.
        both = np.concatenate([xs, xs])
        labels = np.concatenate([np.ones(len(ys)), np.zeros(len(ys))])
        return LogisticRegression(C=c, max_iter=3000).fit(both, labels, sample_weight=np.concatenate([ys, 1 - ys]) + 1e-6)

    best = None
    for c in cfg.get("Cs", [0.1, 1, 10]):
        pred = np.zeros(len(y))
        for tr, te in KFold(5, shuffle=True, random_state=seed).split(x):
            pred[te] = fit(x[tr], y[tr], c).predict_proba(x[te])[:, 1]
        mse = float(np.mean((pred - y) ** 2))
        if best is None or mse < best[1]:
            best = (c, mse)
    assert best is not None
    model = fit(x, y, best[0])
    result = {"model": f"frozen {name} pair embeddings + soft-label logistic regression", "C": best[0], "train_rows": len(rows), "test_rows": len(test),
              "seconds": round(time.time() - t0), "test": scores(model.predict_proba(xt)[:, 1], np.array([r["unli"] for r in test])), "seed": seed}
    out = Path(cfg["out"]) / f"frozen-seed-{seed}"
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "metrics.json", json.dumps(result, indent=2) + "\n")
    return result


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.unli_regression")
    ap.add_argument("--config", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--frozen", action="store_true", help="frozen encoder + logistic regression (minutes), not fine-tuning")
    add_device_argument(ap, "where to fine-tune")
    a = ap.parse_args(argv)
    cfg = load_config(a.config, a.device)
    result = frozen(cfg, a.seed) if a.frozen else train(cfg, a.seed)
    print(json.dumps(result if result is not None else {"stopped_at": cfg.get("stop_at"), "resume": "run the same command without stop_at"}))


if __name__ == "__main__":
    main()
