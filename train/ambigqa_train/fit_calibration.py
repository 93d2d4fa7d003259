"""Fit the answer verifier and the ambiguity detector that reader/answer-set-decider.ts applies,
from what `ambigqa train calibration-data` wrote. Three logistic regressions, each with its L2
strength chosen by cross-validation on its own training rows (folds by question):

- question-only: P(multi) from the question's sentence embedding, fit on AmbigNQ train outside the
  tuning sets; measured (AUROC) on AmbigNQ dev outside eval-300 and the tuning sets, and on AmbiEnt;
- answer verifier: P(correct) of each candidate the extractive reader recalled, over the reader's
  scores of it (merged probability, rank, evidence, and its best passage's own view of it:
  candidateFeatures), fit on the tuning sets (reader-tune: AmbigNQ train; asqa-tune: AmbigNQ dev
  questions of ASQA outside eval-300; never eval-300);
- ambiguity: P(multi) over the question-only logit (out of sample there) and the verified set
  (set_features: the best confidences, their sum, how many verify and from how many passages), with
  the verifier's out-of-fold confidences, fit on the tuning sets when they hold both classes (else
  the question-only model alone).

Then, per passage count read, minConfidence and maxAnswers are chosen by F1 answer on the tuning
sets (exact: the metric's greedy one-to-one match against every annotation's normalised clusters)
from out-of-fold predictions, so that no choice is made on answers a model has seen, among the
settings that return at least min_answers_per_multi answers per multi-answer question there (a
set is to hold the other answers, not only the likeliest one); a larger passage count only when it
beats a smaller one by more than `tolerance`.

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
from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

from .common import load_config, read_jsonl, write_atomic

ANSWER_FEATURES = ["logProbability", "shareOfBest", "rank", "setSize", "evidence", "firstEvidenceRank",
                   "bestLocal", "localMass", "bestInPassage", "bestRelevance", "bestPassageLogProb", "firstSpanPassage", "spanPassages", "topSpanPassages", "holdingPassages", "words",
                   "hasDigit", "capitalised", "askWhen", "askWho", "askHowMany", "whenDate", "whoName", "howManyNumber", "inQuestion", "titleMatch"]
READING_FEATURES = ["questionLogit", "readTitles", "verifiedFirst", "verifiedSecond", "verifiedThird", "verifiedSum", "verifiedCount", "verifiedPassages"]
# answer-set-decider.ts VERIFIED: a candidate counts towards the set's spread from this confidence.
VERIFIED = 0.25


class Standardised:
    """Mean/scale of the training rows, as the TypeScript side applies them."""

    def __init__(self, x: np.ndarray) -> None:
        self.mean = x.mean(0)
        self.scale = np.where(x.std(0) > 1e-9, x.std(0), 1.0)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return (x - self.mean) / self.scale


def choose_c(x: np.ndarray, y: np.ndarray, cs: list[float], folds: int, seed: int, groups: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """The C with the lowest cross-validated log loss, and that C's out-of-fold probabilities
    (folds by `groups` when given: a question's candidates are never split across folds)."""
    best: tuple[float, float, np.ndarray] | None = None
    splits = (list(StratifiedGroupKFold(folds, shuffle=True, random_state=seed).split(x, y, groups)) if groups is not None
              else list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(x, y)))
    for c in cs:
        oof = np.zeros(len(y))
        for tr, te in splits:
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


def decided_sets(rows: list[dict[str, Any]], conf: list[np.ndarray], ambiguity: np.ndarray | None, threshold: float, max_answers: int) -> list[list[str]]:
    """What answer-set-decider.ts returns: candidates at or over the threshold by confidence (the
    best always), at most max_answers, the best alone when not ambiguous."""
    out = []
    for i, r in enumerate(rows):
        ranked = sorted(((c, a["answer"]) for c, a in zip(conf[i], r["answers"])), key=lambda t: -t[0])
        answers = [a for k, (c, a) in enumerate(ranked) if k == 0 or c >= threshold]
        out.append(answers[:max_answers] if ambiguity is None or ambiguity[i] > 0.5 else answers[:1])
    return out


def set_features(row: dict[str, Any], question_logit: float, conf: np.ndarray) -> dict[str, float]:
    """answer-set-decider.ts readingFeatures, from the same inputs: the verified set's spread."""
    ranked = sorted(conf.tolist(), reverse=True) + [0.0, 0.0, 0.0]
    over = [a for a, c in zip(row["answers"], conf) if c >= VERIFIED]
    return {
        **row["reading"], "questionLogit": question_logit,
        "verifiedFirst": ranked[0], "verifiedSecond": ranked[1], "verifiedThird": ranked[2], "verifiedSum": float(conf.sum()),
        "verifiedCount": float(len(over)), "verifiedPassages": float(len({a["features"].get("passage", -1 - k) for k, a in enumerate(over)})),
    }


def per_question(rows: list[dict[str, Any]], values: np.ndarray) -> list[np.ndarray]:
    """Row-flat candidate values split back into one array per question."""
    out, at = [], 0
    for r in rows:
        out.append(values[at:at + len(r["answers"])])
        at += len(r["answers"])
    return out


def stack_verifier(tune: list[dict[str, Any]], oof_a: np.ndarray, ya: np.ndarray, groups: np.ndarray, cross: dict[tuple[str, int], float],
                   cfg: dict[str, Any], seed: int) -> dict[str, Any] | None:
    """The cross-encoder verifier stacked on the answer model (answer-set-decider.ts): for the
    reader's first `candidates` answers that have an out-of-fold cross-encoder logit, a logistic
    model over (the answer model's out-of-fold logit, the cross-encoder's); the other answers keep
    the answer model's confidence. Its out-of-fold confidences replace the answer model's."""
    k = cfg["verifier"]["candidates"]
    # Answers are in the reader's order, so an answer's index is its rank (verifier-pairs' `rank`).
    flat = [(r["id"], j) for r in tune for j in range(len(r["answers"]))]
    rows = np.array([i for i, key in enumerate(flat) if key[1] < k and key in cross], dtype=int)
    if len(rows) == 0:
        return None
    p = np.clip(oof_a[rows], 1e-6, 1 - 1e-6)
    xs = np.stack([np.log(p / (1 - p)), np.array([cross[flat[i]] for i in rows])], 1)
    c_s, oof_s = choose_c(xs, ya[rows], cfg["Cs"], cfg["folds"], seed, groups[rows])
    s_json, _, _ = fit(xs, ya[rows], c_s, ["answerLogit", "verifierLogit"])
    out = oof_a.copy()
    out[rows] = oof_s
    return {"stack": s_json, "oof": out, "candidates_read": int(len(rows)), "cross_encoder_auroc": float(roc_auc_score(ya[rows], xs[:, 1])),
            "answer_model_auroc_on_them": float(roc_auc_score(ya[rows], xs[:, 0])), "stacked_auroc_on_them": float(roc_auc_score(ya[rows], oof_s)),
            "stacked_auroc": float(roc_auc_score(ya, out))}


def fit_reading(tune: list[dict[str, Any]], q_logit: np.ndarray, cfg: dict[str, Any], seed: int,
                cross: dict[tuple[str, int], float] | None = None) -> dict[str, Any]:
    """The verifier, the detector and the set rule for the rows of one passage count."""
    cs, folds = cfg["Cs"], cfg["folds"]
    features = cfg.get("answer_features", ANSWER_FEATURES)
    xa = np.array([[a["features"][f] for f in features] for r in tune for a in r["answers"]], dtype=np.float64)
    ya = np.array([float(a["correct"]) for r in tune for a in r["answers"]])
    groups = np.array([i for i, r in enumerate(tune) for _ in r["answers"]])
    raw = np.minimum(np.exp(xa[:, features.index("logProbability")]), 1)
    c_a, oof_a = choose_c(xa, ya, cs, folds, seed, groups)
    a_json, _, _ = fit(xa, ya, c_a, features)
    stacked = stack_verifier(tune, oof_a, ya, groups, cross, cfg, seed) if cross else None
    if stacked:
        oof_a = stacked.pop("oof")
    conf = per_question(tune, oof_a)
    verifier = {
        "C": c_a, "candidates": len(ya), "correct_share": float(ya.mean()), "cross_validated_auroc": float(roc_auc_score(ya, oof_a)),
        "raw_probability_auroc": float(roc_auc_score(ya, raw)),
        "raw": {"ece": ece(raw, ya), "brier": float(np.mean((raw - ya) ** 2))},
        "cross_validated": {"ece": ece(oof_a, ya), "brier": float(np.mean((oof_a - ya) ** 2))},
        **({"cross_encoder": {k: v for k, v in stacked.items() if k != "stack"}} if stacked else {}),
    }

    # Ambiguity over the verified set. A tuning set of one class cannot teach what reading adds, so
    # the detector is then the question-only model itself (the identity on its logit), and says so.
    ym = np.array([float(r["multi"]) for r in tune])
    reading = cfg.get("reading_features", READING_FEATURES)
    if len(set(ym.tolist())) > 1:
        xm = np.array([[set_features(r, q_logit[i], conf[i])[f] for f in reading] for i, r in enumerate(tune)], dtype=np.float64)
        c_m, oof_m = choose_c(xm, ym, cs, folds, seed)
        m_json, _, _ = fit(xm, ym, c_m, reading)
        ambiguity = {"model": "question-only logit + the verified set", "C": c_m, "tune_multi_share": float(ym.mean()), "tune_cv_auroc": float(roc_auc_score(ym, oof_m)),
                     "tune_question_only_auroc": float(roc_auc_score(ym, q_logit)), "tune_cv_accuracy": float(np.mean((oof_m > 0.5) == ym))}
    else:
        oof_m = 1 / (1 + np.exp(-q_logit))
        m_json = {"features": ["questionLogit"], "mean": [0.0], "scale": [1.0], "weights": [1.0], "bias": 0.0, "C": None}
        ambiguity = {"model": "question-only (the tuning set has one class, so reading features were not fit)", "tune_multi_share": float(ym.mean()),
                     "tune_share_judged_multi": float(np.mean(oof_m > 0.5))}

    grid = []
    for t in cfg["thresholds"]:
        for m in cfg.get("max_answers", [5]):
            for detector in (True, False):
                sets = decided_sets(tune, conf, oof_m if detector else None, t, m)
                grid.append({"minConfidence": t, "maxAnswers": m, "detector": detector, "f1": f1_answer(tune, sets),
                             "answers_per_multi": float(np.mean([len(s) for s, r in zip(sets, tune) if r["multi"]] or [0])),
                             "by_set": {name: f1_answer([r for r in tune if r.get("set") == name], [s for s, r in zip(sets, tune) if r.get("set") == name])
                                        for name in sorted({r.get("set", "tune") for r in tune})}})
    # The best F1; among settings within 0.001 of it, the higher threshold and the fewer answers.
    # A set must hold the other answers: settings under min_answers_per_multi answers per
    # multi-answer question on the tuning sets are left out (unless every one is).
    enough = [g for g in grid if g["answers_per_multi"] >= cfg.get("min_answers_per_multi", 0)] or grid
    chosen = max(enough, key=lambda g: (round(g["f1"]["all"], 3), g["minConfidence"], -g["maxAnswers"]))
    reader_alone = f1_answer(tune, [[a["answer"] for a in r["answers"]][:1] for r in tune])
    return {"answer": a_json, **({"verifier_model": {"candidates": cfg["verifier"]["candidates"], "stack": stacked["stack"]}} if stacked else {}), "ambiguity_model": m_json, "verifier": verifier, "ambiguity": ambiguity, "grid": grid, "chosen": chosen, "best_candidate_alone": reader_alone}


def cross_logits(cfg: dict[str, Any], read: int) -> dict[tuple[str, int], float] | None:
    """The verifier's out-of-fold logits (train_verifier's oof_out) at this passage count, by (question, rank)."""
    if "verifier" not in cfg:
        return None
    path = Path(cfg["verifier"]["oof_file"])
    if not path.exists():
        raise SystemExit(f"fit_calibration: {path} not found: train the verifier first (ambigqa train verifier), or drop `verifier` from the config")
    return {(o["id"], int(o["rank"])): float(o["logit"]) for o in read_jsonl(path) if int(o["read"]) == read} or None


def run(cfg: dict[str, Any], seed: int) -> dict[str, Any]:
    cs, folds = cfg["Cs"], cfg["folds"]
    questions = read_jsonl(Path(cfg["questions_file"]))
    tune_all = read_jsonl(Path(cfg["tune_file"]))
    metrics: dict[str, Any] = {"seed": seed, "tune_questions": len({r["id"] for r in tune_all})}

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

    # Per passage count: the verifier, the detector and the set rule; a larger count only when it
    # beats every smaller one by more than the tolerance.
    by_read: dict[int, dict[str, Any]] = {}
    for n in sorted({int(r.get("read", 0)) for r in tune_all}):
        tune = [r for r in tune_all if int(r.get("read", 0)) == n]
        q_logit = q_model.decision_function(q_std(np.array([r["embedding"] for r in tune], dtype=np.float64)))
        by_read[n] = fit_reading(tune, q_logit, cfg, seed, cross_logits(cfg, n))
    read, fitted = None, None
    for n, f in by_read.items():
        if fitted is None or f["chosen"]["f1"]["all"] > fitted["chosen"]["f1"]["all"] + cfg.get("tolerance", 0.003):
            read, fitted = n, f
    assert fitted is not None
    metrics["by_read"] = {str(n): {k: v for k, v in f.items() if k not in ("answer", "ambiguity_model", "verifier_model")} for n, f in by_read.items()}
    metrics["chosen"] = {"read": read, **fitted["chosen"]}

    out = Path(cfg["out"])
    out.mkdir(parents=True, exist_ok=True)
    chosen = fitted["chosen"]
    model = {"reader": cfg["reader"], "answer": fitted["answer"], **({"verifier": fitted["verifier_model"]} if "verifier_model" in fitted else {}),
             "questionOnly": q_json, "ambiguity": fitted["ambiguity_model"],
             "minConfidence": chosen["minConfidence"], "maxAnswers": chosen["maxAnswers"], "detector": chosen["detector"],
             **({"read": read} if read else {}), "candidates": cfg.get("candidates", 20),
             "fit": {"seed": seed, "tune_file": cfg["tune_file"], "questions_file": cfg["questions_file"]}}
    write_atomic(out / "calibration.json", json.dumps(model) + "\n")
    write_atomic(Path(cfg["metrics_out"]), json.dumps(metrics, indent=2) + "\n")
    return metrics


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.fit_calibration")
    ap.add_argument("--config", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    print(json.dumps(run(load_config(a.config), a.seed), indent=2))


if __name__ == "__main__":
    main()
