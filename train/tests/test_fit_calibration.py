"""The calibration fit: the official greedy F1, ECE, and a whole fit on a small synthetic set
(the JSON it writes is what reader/answer-set-decider.ts reads)."""
import json
import random
from pathlib import Path

import numpy as np
import pytest

from ambigqa_train import fit_calibration as fc


def test_greedy_f1_is_the_official_one_to_one_match() -> None:
    assert fc.greedy_f1([["a", "x"], ["b"]], ["a", "b"]) == 1.0
    # One prediction cannot match two gold clusters.
    assert fc.greedy_f1([["a"], ["a"]], ["a"]) == 2 * 1.0 * 0.5 / 1.5
    assert fc.greedy_f1([["a"]], ["c"]) == 0.0


def test_ece_weighs_bins_by_count() -> None:
    p = np.array([0.9, 0.9, 0.2, 0.2])
    y = np.array([1.0, 0.0, 0.0, 0.0])
    assert abs(fc.ece(p, y) - (2 * 0.4 + 2 * 0.2) / 4) < 1e-12
    assert fc.ece(np.array([1.0, 0.0]), np.array([1.0, 0.0])) == 0.0


def synthetic(tmp_path: Path) -> tuple[dict, list[dict]]:
    """Questions and tuning rows at 5 and 10 passages where only the candidates' own passages tell
    the right answers (a multi question's second answer ranks third), and the fit's config."""
    rng = random.Random(0)
    emb = lambda label: [rng.gauss(1.0 if label else -1.0, 1.0) for _ in range(4)]  # noqa: E731
    questions = [{"id": f"t{i}", "source": "ambignq-train", "eval300": False, "label": i % 2 == 0, "embedding": emb(i % 2 == 0)} for i in range(80)]
    questions += [{"id": f"d{i}", "source": "ambignq-dev", "eval300": i < 10, "label": i % 2 == 0, "embedding": emb(i % 2 == 0)} for i in range(20)]
    questions += [{"id": f"a{i}", "source": "ambient-test", "eval300": False, "label": i % 2 == 0, "embedding": emb(False)} for i in range(20)]

    def candidate(i: int, k: int, correct: bool) -> dict:
        local = -0.5 if correct else -3.0 + rng.gauss(0, 0.3)
        features = {"logProbability": -0.2 - k, "shareOfBest": 1.0 / (k + 1), "rank": k, "setSize": 4, "evidence": 1, "firstEvidenceRank": k,
                    "bestLocal": local, "localMass": 0.5, "bestInPassage": 0, "bestRelevance": 1.0, "bestPassageLogProb": -1.0, "firstSpanPassage": 0.0, "spanPassages": 1,
                    "topSpanPassages": 1 if correct else 0, "holdingPassages": 1, "words": 2, "passage": k,
                    "hasDigit": 0, "capitalised": 1.0, "askWhen": 0, "askWho": 1, "askHowMany": 0, "whenDate": 0, "whoName": 1.0, "howManyNumber": 0, "inQuestion": 0.0, "titleMatch": 0}
        return {"answer": f"ans{i}-{k}", "correct": correct, "features": features}

    tune = []
    for read in (5, 10):
        for i in range(60):
            multi = i % 2 == 0
            # Only the candidates' own passages tell the right ones: a multi question's second answer ranks third.
            answers = [candidate(i, k, k == 0 or (multi and k == 2)) for k in range(4)]
            golds = [[[f"ans{i}-0"], [f"ans{i}-2"]]] if multi else [[[f"ans{i}-0"]]]
            tune.append({"id": f"q{i}", "set": "reader-tune" if i < 30 else "asqa-tune", "read": read, "multi": multi, "golds": golds, "answers": answers,
                         "embedding": emb(multi), "reading": {"readTitles": 3}})
    for name, rows in (("q.jsonl", questions), ("t.jsonl", tune)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = {"questions_file": str(tmp_path / "q.jsonl"), "tune_file": str(tmp_path / "t.jsonl"), "encoder": "e5-small-v2-int8", "reader": "extractive",
           "out": str(tmp_path / "out"), "metrics_out": str(tmp_path / "metrics.json"), "Cs": [0.1, 1], "folds": 3, "thresholds": [0.3, 0.5], "max_answers": [1, 3]}
    return cfg, tune


def test_fit_writes_three_logistic_models_and_a_set_rule(tmp_path: Path) -> None:
    cfg, tune = synthetic(tmp_path)
    metrics = fc.run(cfg, 0)
    model = json.loads((tmp_path / "out" / "calibration.json").read_text())
    assert "verifier" not in model, "no cross-encoder logits: no stack"
    for key, n in (("answer", len(fc.ANSWER_FEATURES)), ("questionOnly", 4), ("ambiguity", len(fc.READING_FEATURES))):
        assert len(model[key]["weights"]) == len(model[key]["mean"]) == len(model[key]["scale"]) == len(model[key]["features"]) == n
    assert model["questionOnly"]["encoder"] == "e5-small-v2-int8"
    # Equal at both counts, so the smaller is read; the verifier finds the third candidate, so sets of up to 3.
    assert model["read"] == 5 and model["maxAnswers"] == 3 and model["minConfidence"] in (0.3, 0.5)
    assert metrics["chosen"]["f1"]["all"] > 0.95
    assert metrics["by_read"]["5"]["verifier"]["cross_validated_auroc"] > 0.9
    assert metrics["by_read"]["5"]["ambiguity"]["tune_cv_auroc"] > 0.7
    assert set(metrics["chosen"]["by_set"]) == {"reader-tune", "asqa-tune"}
    assert metrics["question_only"]["ambignq_dev_outside_eval300_auroc"] > 0.7

    # Tuning sets of multi questions only: the detector is the question-only model.
    for r in tune:
        r["multi"] = True
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in tune))
    metrics = fc.run(cfg, 0)
    model = json.loads((tmp_path / "out" / "calibration.json").read_text())
    assert model["ambiguity"]["features"] == ["questionLogit"] and model["ambiguity"]["weights"] == [1.0]
    assert metrics["by_read"]["5"]["ambiguity"]["model"].startswith("question-only")


def test_set_features_match_the_deciders() -> None:
    row = {"reading": {"readTitles": 2}, "answers": [{"features": {"passage": 0}}, {"features": {"passage": 0}}, {"features": {"passage": 3}}, {"features": {"passage": 4}}]}
    f = fc.set_features(row, 1.5, np.array([0.9, 0.3, 0.6, 0.1]))
    assert f["questionLogit"] == 1.5 and f["readTitles"] == 2
    assert (f["verifiedFirst"], f["verifiedSecond"], f["verifiedThird"]) == (0.9, 0.6, 0.3)
    assert abs(f["verifiedSum"] - 1.9) < 1e-12
    # Three reach 0.25, from two passages.
    assert (f["verifiedCount"], f["verifiedPassages"]) == (3.0, 2.0)


def test_the_cross_encoders_out_of_fold_logits_are_stacked_on_the_answer_model(tmp_path: Path) -> None:
    cfg, tune = synthetic(tmp_path)
    # The cross-encoder read the first 3 candidates at 10 passages; its logit knows the right ones.
    oof = [{"id": r["id"], "read": 10, "rank": k, "answer": a["answer"], "logit": 3.0 if a["correct"] else -3.0}
           for r in tune if r["read"] == 10 for k, a in enumerate(r["answers"][:3])]
    (tmp_path / "oof.jsonl").write_text("".join(json.dumps(o) + "\n" for o in oof))
    cfg = {**cfg, "verifier": {"oof_file": str(tmp_path / "oof.jsonl"), "candidates": 2}}
    metrics = fc.run(cfg, 0)
    stacked = metrics["by_read"]["10"]["verifier"]["cross_encoder"]
    assert stacked["candidates_read"] == 60 * 2, "the first `candidates` of each question"
    assert stacked["cross_encoder_auroc"] == 1.0 and stacked["stacked_auroc_on_them"] >= stacked["answer_model_auroc_on_them"]
    assert "cross_encoder" not in metrics["by_read"]["5"]["verifier"], "no logits at 5 passages: no stack there"
    # Equal F1 at both counts: 5 is read, and its calibration has no stack; at 10 alone it has one.
    model = json.loads((tmp_path / "out" / "calibration.json").read_text())
    assert model["read"] == 5 and "verifier" not in model
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in tune if r["read"] == 10))
    fc.run(cfg, 0)
    model = json.loads((tmp_path / "out" / "calibration.json").read_text())
    assert model["verifier"]["candidates"] == 2 and model["verifier"]["stack"]["features"] == ["answerLogit", "verifierLogit"]
    assert len(model["verifier"]["stack"]["weights"]) == 2


def test_a_missing_oof_file_names_the_command(tmp_path: Path) -> None:
    cfg, _ = synthetic(tmp_path)
    with pytest.raises(SystemExit, match="train verifier"):
        fc.run({**cfg, "verifier": {"oof_file": str(tmp_path / "none.jsonl"), "candidates": 2}}, 0)
