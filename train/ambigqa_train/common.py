"""Shared training helpers: threads, seeds, configs, JSONL."""
from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch


def setup(seed: int) -> None:
    torch.set_num_threads(2)
    random.seed(seed)
    torch.manual_seed(seed)


def load_config(path: Path) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(path.read_text())
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
