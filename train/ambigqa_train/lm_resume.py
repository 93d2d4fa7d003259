"""A LoRA run's checkpoint (train_lm_adapter.py), so that a run stopped on the CPU, where a run takes
hours, resumes where it was and ends with the adapter an uninterrupted run would have made.

What a step depends on, all of it saved: the LoRA A and B tensors (float32), AdamW's moments, the
schedule's position, the step, the epoch and the place within that epoch's batch order (the order
itself, drawn once an epoch from the run's random.Random), that generator's state and torch's (the
dropout masks). One file, `<out>/checkpoint-<run>/state.pt`, written beside and renamed, so a kill
while saving leaves the previous checkpoint whole.
"""
from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path
from typing import Any

import torch

FORMAT = 1


def checkpoint_path(out: Path, run_name: str) -> Path:
    return out / f"checkpoint-{run_name}" / "state.pt"


def fingerprint(run: dict[str, Any], example_ids: list[str], device: torch.device) -> dict[str, Any]:
    """What must match for a checkpoint to be resumed: the run's recipe, its training examples
    and the device kind (CUDA and the CPU do not compute the same floats)."""
    recipe = {k: v for k, v in run.items() if k != "heldout_limit"}
    digest = hashlib.sha256("\n".join(example_ids).encode()).hexdigest()
    return {"format": FORMAT, "run": recipe, "examples": len(example_ids), "examples_sha256": digest,
            "device": device.type}


def rng_states(rng: random.Random, device: torch.device) -> dict[str, Any]:
    states: dict[str, Any] = {"python": rng.getstate(), "torch": torch.get_rng_state()}
    if device.type == "cuda":
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def restore_rng(states: dict[str, Any], rng: random.Random) -> None:
    rng.setstate(_as_tuple(states["python"]))
    torch.set_rng_state(states["torch"])
    if "cuda" in states:
        torch.cuda.set_rng_state_all(states["cuda"])


def _as_tuple(x: Any) -> Any:
    # random.Random.setstate wants tuples all the way down; a round trip may hand back lists.
    return tuple(_as_tuple(v) for v in x) if isinstance(x, (list, tuple)) else x


def save(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load(path: Path, expected: dict[str, Any]) -> dict[str, Any] | None:
    """The checkpoint at `path`, or None when there is none. One made by another recipe, other
    examples or another device is refused with what differs, rather than resumed into a run that
    no uninterrupted run would have made."""
    if not path.exists():
        return None
    state = torch.load(path, map_location="cpu", weights_only=True)
    theirs = state.get("fingerprint", {})
    differs = sorted(k for k in set(expected) | set(theirs) if expected.get(k) != theirs.get(k))
    if differs:
        raise ValueError(f"checkpoint {path} was made by another run ({', '.join(differs)} differ: "
                         f"{ {k: theirs.get(k) for k in differs} } there, { {k: expected.get(k) for k in differs} } here); "
                         "remove it to start the run again")
    return state


def remove(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.with_name(path.name + ".tmp").unlink(missing_ok=True)
    try:
        path.parent.rmdir()
    except OSError:
        pass
