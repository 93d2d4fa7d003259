"""Train the answer verifier: a cross-encoder that reads (question, a candidate answer, the words
around its span in the passage it came from) and gives one logit, "this candidate answers some
reading of the question" (RECTIFY's verifier; reader/answer-set-decider.ts stacks it on the
answer model). Pairs are the extractive reader's own candidates on the tuning sets
(`ambigqa train calibration-data` writes verifier-pairs.jsonl), so its negatives are the reader's
own wrong answers; the warm start is the shipped extractive reader.

Fold by fold (`sets`): each tuning set is scored by a model trained on the other ones, so that
`fit_calibration` stacks out-of-fold logits (verifier-oof.jsonl) and chooses the set rule on
answers no model has seen; then one model on every set is exported for serving (int8 ONNX). Each
training resumes from its checkpoint, and a fold already exported is not redone.

`python -m ambigqa_train.train_verifier --config train/configs/verifier.json --seed 0`
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import roc_auc_score

from .common import add_device_argument, load_config, read_jsonl, write_atomic
from .export_onnx import QUANTIZED, export_cross_encoder, session
from .train_reranker import train as train_pairs


def fold_config(cfg: dict[str, Any], sets: list[str], out: Path, rows: int) -> dict[str, Any]:
    """train_reranker's config for the pairs of `sets`: `epochs` over them in batch_size steps."""
    base = cfg["train"]
    steps = max(1, math.ceil(base["epochs"] * rows / base["batch_size"]))
    return {**{k: v for k, v in base.items() if k != "epochs"}, "train_file": cfg["pairs_file"], "sets": sets, "out": str(out), "steps": steps,
            "save_every": base.get("save_every", steps), "device": cfg.get("device", "cpu")}


def trained(cfg: dict[str, Any], sets: list[str], rows: int, out: Path, seed: int) -> Path:
    """A model on the pairs of `sets`, trained (or resumed) and exported once to out/onnx; its folder."""
    onnx = out / "onnx"
    if (onnx / f"model{QUANTIZED}.onnx").exists():
        return onnx
    train_pairs(fold_config(cfg, sets, out, rows), seed)
    tmp = out / "onnx.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    export_cross_encoder(out / f"seed-{seed}" / "checkpoint", tmp)
    tmp.rename(onnx)
    return onnx


def pair_text(row: dict[str, Any]) -> str:
    """The second segment as retriever/cross-encoder-reranker.ts writes it: `title: text`."""
    return f"{row['title']}: {row['text']}"


def score(folder: Path, rows: list[dict[str, Any]], max_len: int, batch: int = 32) -> np.ndarray:
    """The int8 model's logit for each pair, as the server computes it."""
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast.from_pretrained(str(folder))
    sess = session(folder / f"model{QUANTIZED}.onnx")
    names = [i.name for i in sess.get_inputs()]
    out = []
    for at in range(0, len(rows), batch):
        part = rows[at:at + batch]
        enc = tok([r["question"] for r in part], [pair_text(r) for r in part], max_length=max_len, truncation="only_second",
                  padding=True, return_tensors="np", return_token_type_ids=True)
        out.append(sess.run(None, {n: enc[n].astype(np.int64) for n in names})[0][:, 0])
    return np.concatenate(out) if out else np.zeros(0)


def auroc(labels: list[int], scores: Any) -> float | None:
    """AUROC of the scores against the labels; None when the labels hold one class only."""
    return float(roc_auc_score(labels, scores)) if 0 < sum(labels) < len(labels) else None


def run(cfg: dict[str, Any], seed: int) -> dict[str, Any]:
    rows = read_jsonl(Path(cfg["pairs_file"]))
    sets: list[str] = cfg["sets"]
    unknown = sorted({r["set"] for r in rows} - set(sets))
    if unknown:
        raise SystemExit(f"train_verifier: {cfg['pairs_file']} holds sets {unknown} that the config's sets {sets} do not name")
    out = Path(cfg["out"])
    max_len = cfg["train"]["max_len"]
    metrics: dict[str, Any] = {"seed": seed, "pairs": len(rows), "positive_share": float(np.mean([r["label"] for r in rows])), "folds": {}}
    oof: list[dict[str, Any]] = []
    for held in sets:
        rest = [s for s in sets if s != held]
        folder = trained(cfg, rest, sum(r["set"] in rest for r in rows), out / f"without-{held}", seed)
        mine = [r for r in rows if r["set"] == held]
        logits = score(folder, mine, max_len)
        labels = [r["label"] for r in mine]
        metrics["folds"][held] = {"pairs": len(mine), "auroc": auroc(labels, logits), "reader_rank_auroc": auroc(labels, [-r["rank"] for r in mine])}
        oof += [{"id": r["id"], "read": r["read"], "rank": r["rank"], "answer": r["answer"], "logit": round(float(z), 5)} for r, z in zip(mine, logits)]
    by_key = {(o["id"], o["rank"]): o["logit"] for o in oof}
    metrics["out_of_fold_auroc"] = auroc([r["label"] for r in rows], [by_key[(r["id"], r["rank"])] for r in rows])
    write_atomic(Path(cfg["oof_out"]), "".join(json.dumps(o) + "\n" for o in oof))

    # The served model: every set, int8 only (the fp32 export is 133 MB; card: train/model-cards/verifier).
    folder = trained(cfg, sets, len(rows), out / "all", seed)
    model_out = Path(cfg["model_out"])
    tmp = model_out.with_name(model_out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(folder, tmp, ignore=shutil.ignore_patterns("model.onnx"))
    shutil.rmtree(model_out, ignore_errors=True)
    tmp.rename(model_out)
    write_atomic(Path(cfg["metrics_out"]), json.dumps(metrics, indent=2) + "\n")
    return metrics


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.train_verifier")
    ap.add_argument("--config", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    add_device_argument(ap)
    a = ap.parse_args(argv)
    print(json.dumps(run(load_config(a.config, a.device), a.seed), indent=2))


if __name__ == "__main__":
    main()
