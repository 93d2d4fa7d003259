"""Examples/s of every trainer through its device code (issue 26), a few steps each on the real
configs' settings, with the device named on the command line (cpu here; cuda on a GPU machine).

`PYTHONPATH=train .venv-train/bin/python train/bench_devices.py --device cpu --steps 10 --out /tmp/bench-devices`
Each run starts fresh under --out (seed 0); the rate is run_steps' (first step included).
Configs whose `init` checkpoint is not here start from the warm start instead (qd); the
co-training member starts from the shipped reader's int8 export, dequantised (extractive.py).
"""
from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import torch

from ambigqa_train import cotrain, train_extractive, train_reranker, train_seq2seq, unli_regression
from ambigqa_train.common import load_config, pick_device
from ambigqa_train.extractive import from_quantized_onnx

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "train" / "configs"


def short(name: str, out: Path, steps: int, device: str) -> dict[str, Any]:
    cfg = load_config(CONFIGS / f"{name}.json")
    cfg.pop("init", None)
    return cfg | {"out": str(out / name), "stop_at": steps, "log_every": steps, "save_every": 10**9, "device": device}


def run(device: str, steps: int, out: Path) -> dict[str, Any]:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    results: dict[str, Any] = {"device": pick_device(device).type, "steps": steps, "torch": torch.__version__}
    for name in ("spanseqgen1-pointer", "qd"):
        r = train_seq2seq.train(short(name, out, steps, device), 0)
        results[f"seq2seq {name}"] = {"examples_per_s": round(r["examples_per_s"], 2), "loss": round(r["loss"], 3)}
    r = train_reranker.train(short("reranker-hard", out, steps, device), 0)
    results["reranker reranker-hard (groups of 4)"] = {"groups_per_s": round(r["groups_per_s"], 2), "loss": round(r["loss"], 3)}
    r = train_extractive.train(short("extractive-warm-e5", out, steps, device), 0)
    results["extractive extractive-warm-e5 (groups of 3)"] = {"groups_per_s": round(r["groups_per_s"], 2), "loss": round(r["loss"], 3)}
    cfg = load_config(CONFIGS / "unli-e5.json") | {"out": str(out / "unli"), "device": device, "log_every": steps, "threads": 2}
    per_epoch = len(unli_regression.read_unli(Path(cfg["data_dir"]) / f"{cfg['train_split']}.csv")) // cfg["batch_size"]
    t0 = time.time()
    unli_regression.train(cfg | {"stop_at": steps}, 0)
    results["unli unli-e5"] = {"examples_per_s": round(steps * cfg["batch_size"] / (time.time() - t0), 2), "note": f"wall time incl. model recovery; {per_epoch} steps per epoch"}
    model, tok = from_quantized_onnx(ROOT / "assets" / "models" / "extractive")
    model.save_pretrained(str(out / "member-init"))
    tok.save_pretrained(str(out / "member-init"))
    ccfg = load_config(CONFIGS / "cotrain-e5.json") | {"init": str(out / "member-init"), "steps": steps, "log_every": steps, "save_every": 10**9, "device": device}
    torch.set_num_threads(int(ccfg.get("threads", 1)))
    rows = cotrain.full_examples(Path(ccfg["full_file"]), ccfg.get("full_limit"))
    r = cotrain.train_member(ccfg, rows, 0, out / "member")
    assert r is not None
    results[f"cotrain member cotrain-e5 ({ccfg.get('threads', 1)} thread)"] = {"examples_per_s": round(r["examples_per_s"], 2), "loss": round(r["loss"], 3)}
    return results


def main() -> None:
    ap = argparse.ArgumentParser(prog="bench_devices")
    ap.add_argument("--device", choices=["cpu", "cuda", "auto"], default="auto")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench-devices"))
    a = ap.parse_args()
    print(json.dumps(run(a.device, a.steps, a.out), indent=1))


if __name__ == "__main__":
    main()
