"""Shared training helpers: threads, seeds, configs, JSONL, atomic writes."""
from __future__ import annotations

import json
import argparse
import os
import random
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import torch


def setup(seed: int) -> None:
    torch.set_num_threads(2)
    random.seed(seed)
    torch.manual_seed(seed)


DEVICES = ("cpu", "cuda", "auto")


def pick_device(name: str) -> torch.device:
    """cpu, cuda or auto (cuda when there is one). On CUDA, fp32 with TF32 matmuls: bf16 autocast
    went NaN within 50 steps on the extractive reader (issue 26), so it is not offered."""
    if name not in DEVICES:
        raise SystemExit(f"device {name!r} is not one of {', '.join(DEVICES)}")
    if name == "cuda" and not torch.cuda.is_available():
        raise SystemExit("device cuda asked for, but torch sees no CUDA device (torch.cuda.is_available() is False)")
    device = torch.device("cuda" if name == "cuda" or (name == "auto" and torch.cuda.is_available()) else "cpu")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return device


def device_of(cfg: Mapping[str, Any]) -> torch.device:
    """The config's device (cpu when it names none): every trainer calls this before it reads data
    or builds a model, so `device: cuda` on a machine without one fails at once, with pick_device's
    message, not after minutes of loading."""
    return pick_device(str(cfg.get("device", "cpu")))


def model_device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def to_device(batch: Mapping[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    """A tokenised batch (built on the CPU by the tokenizer) moved to the model's device."""
    return {k: v.to(device) for k, v in batch.items()}


def add_device_argument(ap: argparse.ArgumentParser, what: str = "where to train") -> None:
    """Every trainer's --device: it overrides the config's `device` (load_config's `device`)."""
    ap.add_argument("--device", choices=DEVICES, help=f"{what} (default: the config's device, else cpu)")


def load_config(path: Path, device: str | None = None) -> dict[str, Any]:
    """The config as a dict, its `device` replaced by `device` when one is given (a --device
    flag); a missing or malformed file exits with a message naming it."""
    try:
        config = json.loads(path.read_text())
    except FileNotFoundError:
        raise SystemExit(f"training config {path} not found (the configs are in train/configs/)")
    except json.JSONDecodeError as err:
        raise SystemExit(f"training config {path} is not valid JSON: {err}")
    if not isinstance(config, dict):
        raise SystemExit(f"training config {path} must be a JSON object")
    if device is not None:
        config["device"] = device
    return config


def read_jsonl(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with path.open() as f:
        for line in f:
            if limit is not None and len(rows) >= limit:
                break
            rows.append(json.loads(line))
    return rows


def batch_at(rows: list[dict[str, Any]], size: int, seed: int, step: int) -> list[dict[str, Any]]:
    """The batch of a step: each epoch a shuffle of its own, reproducible from (seed, step) for resuming."""
    epoch, i = divmod(step, max(1, len(rows) // size))
    order = list(range(len(rows)))
    random.Random(seed * 1_000_003 + epoch).shuffle(order)
    return [rows[j] for j in order[i * size : (i + 1) * size]] or rows[:size]


class _PreparedSteps(torch.utils.data.Dataset):  # type: ignore[type-arg]
    """Step i's batch, prepared (tokenised) by a DataLoader worker."""

    def __init__(self, rows: list[dict[str, Any]], size: int, seed: int, prepare: Callable[[list[dict[str, Any]]], Any]) -> None:
        self.rows, self.size, self.seed, self.prepare = rows, size, seed, prepare

    def __len__(self) -> int:
        return 1 << 62

    def __getitem__(self, step: int) -> Any:
        return self.prepare(batch_at(self.rows, self.size, self.seed, step))


def prepared_batches(rows: list[dict[str, Any]], size: int, seed: int, start_step: int, stop: int,
                     prepare: Callable[[list[dict[str, Any]]], Any], workers: int) -> Iterator[Any]:
    """Steps start_step..stop-1's batches (batch_at), each passed through `prepare`; with workers,
    prepared ahead in that many processes (in order), so that tokenising on the CPU does not starve
    a GPU."""
    if workers <= 0:
        for step in range(start_step, stop):
            yield prepare(batch_at(rows, size, seed, step))
        return
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    loader = torch.utils.data.DataLoader(_PreparedSteps(rows, size, seed, prepare), batch_size=None, sampler=range(start_step, stop),
                                         num_workers=workers, prefetch_factor=4)
    yield from loader


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
    loss_of: Callable[[Any], torch.Tensor],
    rate_key: str,
    prepare: Callable[[list[dict[str, Any]]], Any] | None = None,
) -> dict[str, Any]:
    """The training loop both models share: warm-up/linear LR, clipping, JSON progress lines with
    the rate, and an atomic checkpoint (model, tokenizer, optimizer, step) every save_every steps.
    With `prepare`, each batch of rows goes through it first (in cfg["workers"] DataLoader
    processes when given) and loss_of receives what it returns. With cfg["max_seconds"], the run
    also stops (saved) once its steps have taken that long: a borrowed GPU's call has a time limit,
    and the next call resumes from the checkpoint."""
    steps, step = int(cfg["steps"]), start_step
    # stop_at ends this run early on the same schedule: a later run with a higher stop_at resumes
    # it exactly (warm starts are compared at equal examples, then the best one goes on).
    stop = min(steps, int(cfg.get("stop_at", steps)))
    max_seconds = float(cfg.get("max_seconds", "inf"))
    log_every, save_every = cfg.get("log_every", 10), cfg.get("save_every", 200)
    t0, seen, loss_sum, n_loss, last = time.time(), 0, 0.0, 0, float("nan")
    device = model_device(model)
    # A plain line (the JSON progress lines stay the same on every device).
    print(f"train: on {device.type}", flush=True)
    stream = prepared_batches(rows, cfg["batch_size"], seed, step, stop, prepare or (lambda b: b), int(cfg.get("workers", 0)) if prepare else 0)
    while step < stop:
        batch = next(stream)
        # A prepared batch says how many examples it holds ("n").
        size = len(batch) if isinstance(batch, list) else int(batch["n"])
        for g in opt.param_groups:
            g["lr"] = lr_at(step, g.get("base_lr", cfg["lr"]), cfg.get("warmup", 0), steps)
        loss = loss_of(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        seen += size
        loss_sum += loss.item()
        n_loss += 1
        if step % log_every == 0 or step == stop:
            last = loss_sum / n_loss
            rate = seen / (time.time() - t0)
            eta = (stop - step) * size / max(1e-9, rate)
            print(json.dumps({"step": step, "of": stop, "loss": round(last, 4), rate_key: round(rate, 2), "eta_s": round(eta)}), flush=True)
            loss_sum, n_loss = 0.0, 0
        out_of_time = time.time() - t0 >= max_seconds and step < stop
        if step % save_every == 0 or step == stop or out_of_time:
            save_checkpoint(model, tok, opt, step, ckpt)
        if out_of_time:
            print(json.dumps({"stopped": "max_seconds", "step": step, "of": stop, "seconds": round(time.time() - t0)}), flush=True)
            break
    return {"step": step, "loss": last, rate_key: seen / max(1e-9, time.time() - t0), "device": device.type}


def save_checkpoint(model: Any, tok: Any, opt: torch.optim.Optimizer, step: int, ckpt: Path) -> None:
    """Written beside the checkpoint, then swapped in, so a kill never leaves half of one."""
    tmp = ckpt.with_name(ckpt.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    # The device is recorded only to say where it trained: every reader loads state.pt with
    # map_location="cpu" and moves it, so a GPU run's checkpoint resumes on a CPU and back.
    torch.save({"step": step, "optimizer": opt.state_dict(), "device": model_device(model).type}, tmp / "state.pt")
    if ckpt.exists():
        shutil.rmtree(ckpt)
    tmp.rename(ckpt)


def write_atomic(path: Path, text: str) -> None:
    """Written beside and renamed, so a kill never leaves half a file under the real name; the
    folder is made when it is missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
