"""Fit the answer verifier and the ambiguity detector that reader/answer-set-decider.ts applies,
from what `ambigqa train calibration-data` wrote. Logistic regressions, each with its L2 strength
chosen by cross-validation on its own training rows (folds by question):

- question-only, which is the ambiguity probability: P(multi) from the question's sentence
  embedding and its words (TF-IDF of word 1-2 grams, as scikit-learn's TfidfVectorizer makes them
  and answer-set-decider.ts wordsScorer repeats), fit on AmbigNQ train outside the tuning sets: the
  natural mix, about 44% multi; measured (AUROC, ECE) on the 1,702 AmbigNQ dev questions outside
  eval-300, and on AmbiEnt. (The tuning sets are 93% multi-answer: a detector fit on them says
  "ambiguous" to every question, so reading features are not fit into it.)
- answer verifier: P(correct) of each candidate the extractive reader recalled, over the reader's
  scores of it (merged probability, rank, evidence, and its best passage's own view of it:
  candidateFeatures), fit on the tuning sets (reader-tune: AmbigNQ train; asqa-tune: AmbigNQ dev
  questions of ASQA outside eval-300; never eval-300);

Then, per passage count read, minConfidence and maxAnswers are chosen by F1 answer on the tuning
sets (exact: the metric's greedy one-to-one match against every annotation's normalised clusters)
from out-of-fold predictions, so that no choice is made on answers a model has seen, among the
settings that return at least min_answers_per_multi answers per multi-answer question there (a
set is to hold the other answers, not only the likeliest one); the config's `read` is the passage
count served (without it, a larger count only when it beats a smaller one by more than
`tolerance`). Then whether a question judged unambiguous keeps its best answer alone: on the
tuning questions weighted so that the multi-answer share is AmbigNQ train's (the questions a
server is asked are that mix, not the tuning sets' 93%), adopted only when its gain is above zero
at 95% (detector_gain).

`python -m ambigqa_train.fit_calibration --config train/configs/calibration.json --seed 0 [--ambiguity-only]`
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix, hstack
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

from .common import load_config, read_jsonl, write_atomic

ANSWER_FEATURES = ["logProbability", "shareOfBest", "rank", "setSize", "evidence", "firstEvidenceRank",
                   "bestLocal", "localMass", "bestInPassage", "bestRelevance", "bestPassageLogProb", "firstSpanPassage", "spanPassages", "topSpanPassages", "holdingPassages", "words",
                   "hasDigit", "capitalised", "askWhen", "askWho", "askHowMany", "whenDate", "whoName", "howManyNumber", "inQuestion", "titleMatch"]
# The ambiguity model: the question-only logit as it is (answer-set-decider.ts readingFeatures names it).
IDENTITY = {"features": ["questionLogit"], "mean": [0.0], "scale": [1.0], "weights": [1.0], "bias": 0.0, "C": None}


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


def f1_answer(rows: list[dict[str, Any]], sets: list[list[str]], weights: np.ndarray | None = None) -> dict[str, float]:
    """Mean F1 answer over all and multi questions (an empty set scores 0, as the eval's [''] does),
    each question weighted by `weights` when given."""
    per = per_question_f1(rows, sets)
    w = np.ones(len(rows)) if weights is None else weights
    multi = np.array([bool(r["multi"]) for r in rows])
    return {"all": float(np.average(per, weights=w)) if len(rows) else 0.0, "multi": float(np.average(per[multi], weights=w[multi])) if multi.any() else 0.0}


def per_question_f1(rows: list[dict[str, Any]], sets: list[list[str]]) -> np.ndarray:
    return np.array([max(greedy_f1(g, s) for g in r["golds"]) if s else 0.0 for r, s in zip(rows, sets)])


def detector_gain(rows: list[dict[str, Any]], off: list[list[str]], on: list[list[str]], weights: np.ndarray, seed: int, resamples: int = 2000) -> dict[str, Any]:
    """The weighted F1 answer the one-answer rule adds (on minus off), with a 95% paired bootstrap
    interval over the questions; `adopted` when the interval is above zero."""
    diff = per_question_f1(rows, on) - per_question_f1(rows, off)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(rows), size=(resamples, len(rows)))
    boot = (diff[draws] * weights[draws]).sum(1) / weights[draws].sum(1)
    low, high = np.percentile(boot, [2.5, 97.5])
    return {"natural_mix": float(np.average(diff, weights=weights)), "interval": [float(low), float(high)], "unweighted": float(diff.mean()), "adopted": bool(low > 0)}


def natural_weights(rows: list[dict[str, Any]], multi_share: float) -> np.ndarray:
    """Per question, the weight that makes the rows' multi-answer share `multi_share` (1 for all
    when the rows hold one class)."""
    multi = np.array([bool(r["multi"]) for r in rows])
    if multi.all() or not multi.any():
        return np.ones(len(rows))
    return np.where(multi, multi_share / multi.mean(), (1 - multi_share) / (1 - multi.mean()))


def decided_sets(rows: list[dict[str, Any]], conf: list[np.ndarray], ambiguity: np.ndarray | None, threshold: float, max_answers: int) -> list[list[str]]:
    """What answer-set-decider.ts returns: candidates at or over the threshold by confidence (the
    best always), at most max_answers, the best alone when not ambiguous."""
    out = []
    for i, r in enumerate(rows):
        ranked = sorted(((c, a["answer"]) for c, a in zip(conf[i], r["answers"])), key=lambda t: -t[0])
        answers = [a for k, (c, a) in enumerate(ranked) if k == 0 or c >= threshold]
        out.append(answers[:max_answers] if ambiguity is None or ambiguity[i] > 0.5 else answers[:1])
    return out


class QuestionFeatures:
    """The question-only model's inputs: the standardised sentence embedding times `embedding_weight`
    (how much it counts against the words under one L2 penalty) beside the TF-IDF of the question's
    word 1-2 grams (lower-cased runs of two or more word characters; sublinear tf, smoothed idf, each
    row L2-normalised): what answer-set-decider.ts questionScorer computes from the JSON."""

    def __init__(self, rows: list[dict[str, Any]], embedding_weight: float, min_df: int) -> None:
        self.standardised = Standardised(np.array([r["embedding"] for r in rows], dtype=np.float64))
        self.embedding_weight = embedding_weight
        self.words = TfidfVectorizer(ngram_range=(1, 2), min_df=min_df, sublinear_tf=True, dtype=np.float64).fit([r["text"] for r in rows]) if min_df else None

    def __call__(self, rows: list[dict[str, Any]]) -> Any:
        dense = csr_matrix(self.standardised(np.array([r["embedding"] for r in rows], dtype=np.float64)) * self.embedding_weight)
        return hstack([dense, self.words.transform([r["text"] for r in rows])]).tocsr() if self.words else dense


def fit_question_only(train: list[dict[str, Any]], cfg: dict[str, Any], seed: int) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """The question-only model with (C, embedding weight) chosen by cross-validated log loss on
    `train` (the features refit in each fold): its JSON, a function giving the logit of rows, and
    what the choice saw. Without words (`question_min_df` 0, or rows without text) the embedding alone."""
    y = np.array([float(r["label"]) for r in train])
    min_df = cfg.get("question_min_df", 2) if all("text" in r for r in train) else 0
    grid = [(c, a) for c in cfg.get("question_Cs", cfg["Cs"]) for a in (cfg.get("embedding_weights", [0.05, 0.1, 0.2]) if min_df else [1.0])]
    splits = list(StratifiedKFold(cfg["folds"], shuffle=True, random_state=seed).split(np.zeros(len(y)), y))
    tried = []
    for c, a in grid:
        oof = np.zeros(len(y))
        for tr, te in splits:
            f = QuestionFeatures([train[i] for i in tr], a, min_df)
            oof[te] = LogisticRegression(C=c, max_iter=5000).fit(f([train[i] for i in tr]), y[tr]).predict_proba(f([train[i] for i in te]))[:, 1]
        p = np.clip(oof, 1e-6, 1 - 1e-6)
        tried.append({"C": c, "embedding_weight": a, "cv_log_loss": float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))), "cv_auroc": float(roc_auc_score(y, oof))})
    best = min(tried, key=lambda t: t["cv_log_loss"])
    f = QuestionFeatures(train, best["embedding_weight"], min_df)
    model = LogisticRegression(C=best["C"], max_iter=5000).fit(f(train), y)
    w = model.coef_[0]
    dims = f.standardised.mean.shape[0]
    as_json: dict[str, Any] = {"features": [f"e{i}" for i in range(dims)], "mean": f.standardised.mean.tolist(),
                               "scale": (f.standardised.scale / best["embedding_weight"]).tolist(), "weights": w[:dims].tolist(),
                               "bias": float(model.intercept_[0]), "C": best["C"], "embeddingWeight": best["embedding_weight"]}
    if f.words:
        idf = [round(float(v), 8) for v in f.words.idf_]
        weights = [round(float(v), 6) for v in w[dims:]]
        as_json["words"] = {"ngrams": 2, "terms": f.words.get_feature_names_out().tolist(), "idf": idf, "weights": weights}
        # The words part of a few questions' logits, from scikit-learn: test/answer-set-decider.test.ts
        # checks that wordsLogit's tokenizer and weighting give the same.
        probe = [r["text"] for r in train[:8]] + ["Who sang \"Still Crazy After All These Years\"? (1975) — Paul Simon's", "¿Quién ganó la Copa Mundial de la FIFA 2010?"]
        as_json["words"]["checks"] = [{"question": q, "logit": float(v)} for q, v in zip(probe, f.words.transform(probe) @ np.array(weights))]
    return as_json, lambda rows: model.decision_function(f(rows)), {"grid": tried, "chosen": best, "min_df": min_df, "terms": len(as_json.get("words", {}).get("terms", []))}


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
                cross: dict[tuple[str, int], float] | None = None, multi_share: float = 0.5) -> dict[str, Any]:
    """The verifier and the set rule for the rows of one passage count; the tuning questions weighted
    to `multi_share` multi-answer questions when the rule is chosen."""
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

    # Ambiguity: the question-only model as it is (out of sample on the tuning questions).
    ym = np.array([float(r["multi"]) for r in tune])
    ambiguity_p = 1 / (1 + np.exp(-q_logit))
    ambiguity = {"model": "question-only", "tune_multi_share": float(ym.mean()), "tune_share_judged_multi": float(np.mean(ambiguity_p > 0.5)),
                 **({"tune_auroc": float(roc_auc_score(ym, q_logit))} if len(set(ym.tolist())) > 1 else {})}

    weights = natural_weights(tune, multi_share)
    grid = []
    for t in cfg["thresholds"]:
        for m in cfg.get("max_answers", [5]):
            for detector in (True, False):
                sets = decided_sets(tune, conf, ambiguity_p if detector else None, t, m)
                grid.append({"minConfidence": t, "maxAnswers": m, "detector": detector, "f1": f1_answer(tune, sets), "f1_natural_mix": f1_answer(tune, sets, weights),
                             "answers_per_multi": float(np.mean([len(s) for s, r in zip(sets, tune) if r["multi"]] or [0])),
                             "by_set": {name: f1_answer([r for r in tune if r.get("set") == name], [s for s, r in zip(sets, tune) if r.get("set") == name])
                                        for name in sorted({r.get("set", "tune") for r in tune})}})
    # The set as read: the best F1; among settings within 0.001 of it, the higher threshold and the
    # fewer answers. A set must hold the other answers: settings under min_answers_per_multi answers
    # per multi-answer question on the tuning sets are left out (unless every one is).
    as_read = [g for g in grid if not g["detector"]]
    enough = [g for g in as_read if g["answers_per_multi"] >= cfg.get("min_answers_per_multi", 0)] or as_read
    chosen = max(enough, key=lambda g: (round(g["f1"]["all"], 3), g["minConfidence"], -g["maxAnswers"]))
    # Then whether a question judged unambiguous keeps its best answer alone: on the natural mix
    # (the tuning questions weighted to AmbigNQ train's multi share), adopted only when its gain is
    # above zero at 95% (a paired bootstrap over the questions): the single-answer questions that
    # carry that weight are few (7% of the tuning sets).
    off = decided_sets(tune, conf, None, chosen["minConfidence"], chosen["maxAnswers"])
    on = decided_sets(tune, conf, ambiguity_p, chosen["minConfidence"], chosen["maxAnswers"])
    gain = detector_gain(tune, off, on, weights, seed)
    detector_entry = next(g for g in grid if g["detector"] and g["minConfidence"] == chosen["minConfidence"] and g["maxAnswers"] == chosen["maxAnswers"])
    chosen = {**(detector_entry if gain["adopted"] else chosen), "detector_gain": gain}
    reader_alone = f1_answer(tune, [[a["answer"] for a in r["answers"]][:1] for r in tune])
    return {"answer": a_json, **({"verifier_model": {"candidates": cfg["verifier"]["candidates"], "stack": stacked["stack"]}} if stacked else {}), "verifier": verifier, "ambiguity": ambiguity, "grid": grid, "chosen": chosen, "best_candidate_alone": reader_alone}


def cross_logits(cfg: dict[str, Any], read: int) -> dict[tuple[str, int], float] | None:
    """The verifier's out-of-fold logits (train_verifier's oof_out) at this passage count, by (question, rank)."""
    if "verifier" not in cfg:
        return None
    path = Path(cfg["verifier"]["oof_file"])
    if not path.exists():
        raise SystemExit(f"fit_calibration: {path} not found: train the verifier first (ambigqa train verifier), or drop `verifier` from the config")
    return {(o["id"], int(o["rank"])): float(o["logit"]) for o in read_jsonl(path) if int(o["read"]) == read} or None


def measured(logits: np.ndarray, rows: list[dict[str, Any]]) -> dict[str, float]:
    """AUROC, ECE (10 bins), mean probability and true multi share of the ambiguity probability."""
    y = np.array([float(r["label"]) for r in rows])
    p = 1 / (1 + np.exp(-logits))
    return {"questions": len(rows), "auroc": float(roc_auc_score(y, logits)), "ece": ece(p, y), "mean_probability": float(p.mean()),
            "multi_share": float(y.mean()), "judged_ambiguous": float(np.mean(p > 0.5)), "accuracy": float(np.mean((p > 0.5) == y))}


def run(cfg: dict[str, Any], seed: int, ambiguity_only: bool = False) -> dict[str, Any]:
    """The fit. `ambiguity_only`: the calibration.json already at `out` keeps its answer model,
    verifier, threshold, cap and passage count, and only the question-only model and the
    one-answer rule's decision are replaced (everything is still fit and reported)."""
    questions = read_jsonl(Path(cfg["questions_file"]))
    tune_all = read_jsonl(Path(cfg["tune_file"]))
    metrics: dict[str, Any] = {"seed": seed, "tune_questions": len({r["id"] for r in tune_all})}

    # Question-only: the ambiguity probability.
    train = [q for q in questions if q["source"] == "ambignq-train"]
    q_json, q_logits, choice = fit_question_only(train, cfg, seed)
    q_json["encoder"] = cfg["encoder"]
    multi_share = float(np.mean([q["label"] for q in train]))
    source = lambda name, **kw: [q for q in questions if q["source"] == name and all(q.get(k) == v for k, v in kw.items())]  # noqa: E731
    metrics["question_only"] = {
        **choice, "train_rows": len(train), "train_multi_share": multi_share,
        "ambignq_dev_outside_eval300": measured(q_logits(source("ambignq-dev", eval300=False)), source("ambignq-dev", eval300=False)),
        "ambignq_eval300": measured(q_logits(source("ambignq-dev", eval300=True)), source("ambignq-dev", eval300=True)),
        **({"ambient_test": measured(q_logits(source("ambient-test")), source("ambient-test"))} if source("ambient-test") else {}),
    }

    # Per passage count: the verifier, the detector and the set rule; a larger count only when it
    # beats every smaller one by more than the tolerance.
    by_read: dict[int, dict[str, Any]] = {}
    for n in sorted({int(r.get("read", 0)) for r in tune_all}):
        tune = [r for r in tune_all if int(r.get("read", 0)) == n]
        if "words" in q_json and not all("question" in r for r in tune):
            raise SystemExit(f"fit_calibration: {cfg['tune_file']} has no question texts: rewrite it with `ambigqa train calibration-data`")
        q_logit = q_logits([{"embedding": r["embedding"], "text": r.get("question", "")} for r in tune])
        by_read[n] = fit_reading(tune, q_logit, cfg, seed, cross_logits(cfg, n), multi_share)
    read, fitted = None, None
    if "read" in cfg:
        # The passage count the server reads (config reader.read), chosen before and measured on the
        # evaluation sets: the others are fit and reported only.
        if cfg["read"] not in by_read:
            raise SystemExit(f"fit_calibration: the config's read {cfg['read']} is not among the passage counts of {cfg['tune_file']} ({sorted(by_read)})")
        read, fitted = cfg["read"], by_read[cfg["read"]]
    for n, f in by_read.items():
        if "read" not in cfg and (fitted is None or f["chosen"]["f1"]["all"] > fitted["chosen"]["f1"]["all"] + cfg.get("tolerance", 0.003)):
            read, fitted = n, f
    assert fitted is not None
    metrics["by_read"] = {str(n): {k: v for k, v in f.items() if k not in ("answer", "verifier_model")} for n, f in by_read.items()}
    metrics["chosen"] = {"read": read, **fitted["chosen"]}

    out = Path(cfg["out"])
    out.mkdir(parents=True, exist_ok=True)
    chosen = fitted["chosen"]
    model = {"reader": cfg["reader"], "answer": fitted["answer"], **({"verifier": fitted["verifier_model"]} if "verifier_model" in fitted else {}),
             "questionOnly": q_json, "ambiguity": {k: v for k, v in IDENTITY.items() if k != "C"},
             "minConfidence": chosen["minConfidence"], "maxAnswers": chosen["maxAnswers"], "detector": chosen["detector"],
             **({"read": read} if read else {}), "candidates": cfg.get("candidates", 20),
             "fit": {"seed": seed, "tune_file": cfg["tune_file"], "questions_file": cfg["questions_file"]}}
    if ambiguity_only:
        path = out / "calibration.json"
        if not path.exists():
            raise SystemExit(f"fit_calibration: --ambiguity-only refits the ambiguity part of {path}, which does not exist: fit the whole file first")
        kept = json.loads(path.read_text())
        model = {**kept, "questionOnly": model["questionOnly"], "ambiguity": model["ambiguity"], "detector": model["detector"],
                 "fit": {**model["fit"], "ambiguity_only": True, "answer_fit": kept.get("fit")}}
        metrics["ambiguity_only"] = {"kept": ["reader", "answer", "verifier", "minConfidence", "maxAnswers", "read", "candidates"]}
    write_atomic(out / "calibration.json", json.dumps(model) + "\n")
    write_atomic(Path(cfg["metrics_out"]), json.dumps(metrics, indent=2) + "\n")
    return metrics


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="ambigqa_train.fit_calibration")
    ap.add_argument("--config", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ambiguity-only", action="store_true", help="replace only the question-only model and the one-answer rule of the calibration.json at `out`")
    a = ap.parse_args(argv)
    print(json.dumps(run(load_config(a.config), a.seed, a.ambiguity_only), indent=2))


if __name__ == "__main__":
    main()
