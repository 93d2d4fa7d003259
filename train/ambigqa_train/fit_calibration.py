"""Fit the answer calibrator and the ambiguity detector that reader/answer-set-decider.ts applies,
from what `ambigqa train calibration-data` wrote. Three logistic regressions, each with its L2
strength chosen by stratified k-fold cross-validation on its own training rows:

- question-only: P(multi) from the question's sentence embedding, fit on AmbigNQ train outside the
  tuning split; measured (AUROC) on AmbigNQ dev outside eval-300 and on AmbiEnt;
- answer calibrator: P(correct) of each answer the reader returned, over the reader's own scores,
  fit on the tuning split (train/splits/reader-tune.txt; AmbigNQ train, never eval-300);
- ambiguity: P(multi) over the question-only logit (out of sample there: the tuning split is left
  out of its fit) and the reading features, fit on the tuning split when it holds both classes
  (else the question-only model alone).

minConfidence is then chosen on the tuning split by F1 answer (exact: the metric's greedy
one-to-one match against every annotation's normalised clusters) with cross-validated
predictions, so that the choice is not made on answers the calibrator has seen.

`python -m ambigqa_train.fit_calibration --config train/configs/calibration.json --seed 0`
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

from .common import load_config, read_jsonl, write_atomic

ANSWER_FEATURES = ["logProbability", "shareOfBest", "rank", "setSize", "evidence", "firstEvidenceRank"]
READING_FEATURES = ["questionLogit", "setSize", "logBest", "secondShare", "answerTitles", "readTitles"]


class Standardised:
    """Mean/scale of the training rows, as the TypeScript side applies them."""

    def __init__(self, x: np.ndarray) -> None:
        self.mean = x.mean(0)
        self.scale = np.where(x.std(0) > 1e-9, x.std(0), 1.0)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return (x - self.mean) / self.scale


def choose_c(x: np.ndarray, y: np.ndarray, cs: list[float], folds: int, seed: int) -> tuple[float, np.ndarray]:
    """The C with the lowest cross-validated log loss, and that C's out-of-fold probabilities."""
    best: tuple[float, float, np.ndarray] | None = None
    for c in cs:
        oof = np.zeros(len(y))
        for tr, te in StratifiedKFold(folds, shuffle=True, random_state=seed).split(x, y):
            s = Standardised(x[tr])
            oof[te] = LogisticRegression(C=c, max_iter=2000).fit(s(x[tr]), y[tr]).predict_proba(s(x[te]))[:, 1]
        p = np.clip(oof, 1e-6, 1 - 1e-6)
        loss = float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
        if best is None or loss < best[1]:
            best = (c, loss, oof)
    assert best is not None
    return best[0], best[2]


def fit(x: np.ndarray, y: np.ndarray, c: float, names: list[str]) -> tuple[dict[str, Any], Standardised, LogisticRegression]:
    s = Standardised(x)
    model = LogisticRegression(C=c, max_iter=2000).fit(s(x), y)
    as_json = {"features": names, "mean": s.mean.tolist(), "scale": s.scale.tolist(), "weights": model.coef_[0].tolist(), "bias": float(model.intercept_[0]), "C": c}
    return as_json, s, model


def ece(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error over equal-width bins (the last one closed)."""
    idx = np.minimum((p * bins).astype(int), bins - 1)
    return float(sum(abs(p[idx == b].mean() - y[idx == b].mean()) * (idx == b).sum() for b in range(bins) if (idx == b).any()) / len(p))


def greedy_f1(golds: list[list[str]], preds: list[str]) -> float:
    """The official get_f1: golds in order, each matched to the first unused prediction among its aliases."""
    used: set[int] = set()
    matched = 0
    for cluster in golds:
        for j, p in enumerate(preds):
            if j not in used and p in cluster:
                used.add(j)
                matched += 1
                break
    if matched == 0:
        return 0.0
    precision, recall = matched / len(preds), matched / len(golds)
    return 2 * precision * recall / (precision + recall)


def f1_answer(rows: list[dict[str, Any]], sets: list[list[str]]) -> dict[str, float]:
    """Mean F1 answer over all and multi questions (an empty set scores 0, as the eval's [''] does)."""
    per = [max(greedy_f1(g, s) for g in r["golds"]) if s else 0.0 for r, s in zip(rows, sets)]
    multi = [f for f, r in zip(per, rows) if r["multi"]]
    return {"all": float(np.mean(per)), "multi": float(np.mean(multi)) if multi else 0.0}


def decided_sets(rows: list[dict[str, Any]], conf: list[np.ndarray], ambiguity: np.ndarray | None, threshold: float) -> list[list[str]]:
    """What answer-set-decider.ts returns: answers at or over the threshold by confidence, the best alone when not ambiguous."""
    out = []
    for i, r in enumerate(rows):
        kept = sorted(((c, a["answer"]) for c, a in zip(conf[i], r["answers"]) if c >= threshold), key=lambda t: -t[0])
        answers = [a for _, a in kept]
        out.append(answers if ambiguity is None or ambiguity[i] > 0.5 else answers[:1])
    return out


def run(cfg: dict[str, Any], seed: int) -> dict[str, Any]:
    cs, folds = cfg["Cs"], cfg["folds"]
    questions = read_jsonl(Path(cfg["questions_file"]))
    tune = read_jsonl(Path(cfg["tune_file"]))
    metrics: dict[str, Any] = {"seed": seed, "tune_questions": len(tune)}

    # Question-only.
    def part(pred: Any) -> tuple[np.ndarray, np.ndarray]:
        rows = [q for q in questions if pred(q)]
        return np.array([q["embedding"] for q in rows], dtype=np.float64), np.array([float(q["label"]) for q in rows])

    xq, yq = part(lambda q: q["source"] == "ambignq-train")
    c_q, oof_q = choose_c(xq, yq, cs, folds, seed)
    q_json, q_std, q_model = fit(xq, yq, c_q, [f"e{i}" for i in range(xq.shape[1])])
    q_json["encoder"] = cfg["encoder"]
    auroc = lambda x, y: float(roc_auc_score(y, q_model.decision_function(q_std(x))))  # noqa: E731
    metrics["question_only"] = {
        "C": c_q, "train_rows": len(yq), "train_multi_share": float(yq.mean()), "train_cv_auroc": float(roc_auc_score(yq, oof_q)),
        "ambignq_dev_outside_eval300_auroc": auroc(*part(lambda q: q["source"] == "ambignq-dev" and not q["eval300"])),
        "ambignq_eval300_auroc": auroc(*part(lambda q: q["source"] == "ambignq-dev" and q["eval300"])),
        "ambient_test_auroc": auroc(*part(lambda q: q["source"] == "ambient-test")),
        "ambient_test_ambiguous_share": float(part(lambda q: q["source"] == "ambient-test")[1].mean()),
    }

    # Answer calibrator.
    answers = [(i, a) for i, r in enumerate(tune) for a in r["answers"]]
    xa = np.array([[a["features"][f] for f in ANSWER_FEATURES] for _, a in answers], dtype=np.float64)
    ya = np.array([float(a["correct"]) for _, a in answers])
    raw = np.exp(xa[:, 0])
    c_a, oof_a = choose_c(xa, ya, cs, folds, seed)
    a_json, _, _ = fit(xa, ya, c_a, ANSWER_FEATURES)
    metrics["answer_calibrator"] = {
        "C": c_a, "answers": len(ya), "correct_share": float(ya.mean()),
        "raw": {"ece": ece(np.minimum(raw, 1), ya), "brier": float(np.mean((np.minimum(raw, 1) - ya) ** 2))},
        "cross_validated": {"ece": ece(oof_a, ya), "brier": float(np.mean((oof_a - ya) ** 2))},
    }

    # Ambiguity: reading features with the question-only logit. A tuning split of one class (the
    # shipped one is qa-feedback's 500 AmbigNQ train questions, every one multi) cannot teach what
    # reading adds, so the detector is then the question-only model itself (the identity on its
    # logit), and says so.
    tq = np.array([r["embedding"] for r in tune], dtype=np.float64)
    q_logit = q_model.decision_function(q_std(tq))
    ym = np.array([float(r["multi"]) for r in tune])
    if len(set(ym.tolist())) > 1:
        xm = np.array([[q_logit[i] if f == "questionLogit" else r["reading"][f] for f in READING_FEATURES] for i, r in enumerate(tune)], dtype=np.float64)
        c_m, oof_m = choose_c(xm, ym, cs, folds, seed)
        m_json, _, _ = fit(xm, ym, c_m, READING_FEATURES)
        metrics["ambiguity"] = {"model": "question-only logit + reading features", "C": c_m, "tune_multi_share": float(ym.mean()), "tune_cv_auroc": float(roc_auc_score(ym, oof_m)),
                                "tune_question_only_auroc": float(roc_auc_score(ym, q_logit)), "tune_cv_accuracy": float(np.mean((oof_m > 0.5) == ym))}
    else:
        oof_m = 1 / (1 + np.exp(-q_logit))
        m_json = {"features": ["questionLogit"], "mean": [0.0], "scale": [1.0], "weights": [1.0], "bias": 0.0, "C": None}
        metrics["ambiguity"] = {"model": "question-only (the tuning split has one class, so reading features were not fit)", "tune_multi_share": float(ym.mean()),
                                "tune_share_judged_multi": float(np.mean(oof_m > 0.5))}

    # minConfidence by F1 answer on the tuning split, from out-of-fold predictions.
    conf = [np.zeros(len(r["answers"])) for r in tune]
    for k, (i, _) in enumerate(answers):
        conf[i][sum(1 for j, _ in answers[:k] if j == i)] = oof_a[k]
    raw_sets = [[a["answer"] for a in r["answers"]] for r in tune]
    grid = []
    for t in cfg["thresholds"]:
        grid.append({"minConfidence": t, "with_detector": f1_answer(tune, decided_sets(tune, conf, oof_m, t)), "without_detector": f1_answer(tune, decided_sets(tune, conf, None, t))})
    # Chosen without the detector: on a one-class split, cutting a set to one answer is only ever
    # wrong, which says nothing of the threshold.
    chosen = max(grid, key=lambda g: (round(g["without_detector"]["all"], 4), -g["minConfidence"]))
    metrics["tune_f1_answer"] = {"reader_alone": f1_answer(tune, raw_sets), "grid": grid, "chosen": chosen}

    out = Path(cfg["out"])
    out.mkdir(parents=True, exist_ok=True)
    model = {"reader": cfg["reader"], "answer": a_json, "questionOnly": q_json, "ambiguity": m_json, "minConfidence": chosen["minConfidence"],
             "fit": {"seed": seed, "tune_file": cfg["tune_file"], "questions_file": cfg["questions_file"]}}
    write_atomic(out / "calibration.json", json.dumps(model) + "\n")
    Path(cfg["metrics_out"]).parent.mkdir(parents=True, exist_ok=True)
    Path(cfg["metrics_out"]).write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.fit_calibration")
    ap.add_argument("--config", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    print(json.dumps(run(load_config(a.config), a.seed), indent=2))


if __name__ == "__main__":
    main()
