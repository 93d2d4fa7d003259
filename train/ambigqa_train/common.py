"""Shared training helpers: threads, seeds, configs, JSONL, atomic writes."""
from __future__ import annotations

import json
import os
import random
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch


def setup(seed: int) -> None:
    torch.set_num_threads(2)
    random.seed(seed)
    torch.manual_seed(seed)


def load_config(path: Path) -> dict[str, Any]:
    """The config as a dict; a missing or malformed file exits with a message naming it."""
    try:
        config = json.loads(path.read_text())
    except FileNotFoundError:
        raise SystemExit(f"training config {path} not found (the configs are in train/configs/)")
    except json.JSONDecodeError as err:
        raise SystemExit(f"training config {path} is not valid JSON: {err}")
    if not isinstance(config, dict):
        raise SystemExit(f"training config {path} must be a JSON object")
    return config


def read_jsonl(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with path.open() as f:
        for line in f:
            if limit is not None and len(rows) >= limit:
                break
            rows.append(json.loads(line))
    return rows


def batches(rows: list[dict[str, Any]], size: int, seed: int, start_step: int) -> Iterator[list[dict[str, Any]]]:
    """An endless stream of shuffled batches, reproducible from (seed, step) for resuming."""
    epoch_len = max(1, len(rows) // size)
    step = start_step
    while True:
        epoch, i = divmod(step, epoch_len)
        order = list(range(len(rows)))
        random.Random(seed * 1_000_003 + epoch).shuffle(order)
        yield [rows[j] for j in order[i * size : (i + 1) * size]] or rows[:size]
        step += 1


def lr_at(step: int, base: float, warmup: int, total: int) -> float:
    if step < warmup:
        return base * (step + 1) / warmup
    return base * max(0.0, (total - step) / max(1, total - warmup))


def run_steps(
    model: torch.nn.Module,
    tok: Any,
    opt: torch.optim.Optimizer,
    rows: list[dict[str, Any]],
    cfg: dict[str, Any],
    seed: int,
    start_step: int,
    ckpt: Path,
    loss_of: Callable[[list[dict[str, Any]]], torch.Tensor],
    rate_key: str,
) -> dict[str, float]:
    """The training loop both models share: warm-up/linear LR, clipping, JSON progress lines with
    the rate, and an atomic checkpoint (model, tokenizer, optimizer, step) every save_every steps."""
    steps, step = int(cfg["steps"]), start_step
    # stop_at ends this run early on the same schedule: a later run with a higher stop_at resumes
    # it exactly (warm starts are compared at equal examples, then the best one goes on).
    stop = min(steps, int(cfg.get("stop_at", steps)))
    log_every, save_every = cfg.get("log_every", 10), cfg.get("save_every", 200)
    t0, seen, loss_sum, n_loss, last = time.time(), 0, 0.0, 0, float("nan")
    stream = batches(rows, cfg["batch_size"], seed, step)
    while step < stop:
        batch = next(stream)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, g.get("base_lr", cfg["lr"]), cfg.get("warmup", 0), steps)
        loss = loss_of(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        seen += len(batch)
        loss_sum += loss.item()
        n_loss += 1
        if step % log_every == 0 or step == stop:
            last = loss_sum / n_loss
            rate = seen / (time.time() - t0)
            eta = (stop - step) * len(batch) / max(1e-9, rate)
            print(json.dumps({"step": step, "of": stop, "loss": round(last, 4), rate_key: round(rate, 2), "eta_s": round(eta)}), flush=True)
            loss_sum, n_loss = 0.0, 0
        if step % save_every == 0 or step == stop:
            save_checkpoint(model, tok, opt, step, ckpt)
    return {"step": step, "loss": last, rate_key: seen / max(1e-9, time.time() - t0)}


def save_checkpoint(model: Any, tok: Any, opt: torch.optim.Optimizer, step: int, ckpt: Path) -> None:
    """Written beside the checkpoint, then swapped in, so a kill never leaves half of one."""
    tmp = ckpt.with_name(ckpt.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    torch.save({"step": step, "optimizer": opt.state_dict()}, tmp / "state.pt")
    if ckpt.exists():
        shutil.rmtree(ckpt)
    tmp.rename(ckpt)


def write_atomic(path: Path, text: str) -> None:
    """Written beside and renamed, so a kill never leaves half a file under the real name."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
