"""The calibration fit: the official greedy F1, ECE, and a whole fit on a small synthetic set
(the JSON it writes is what reader/answer-set-decider.ts reads)."""
import json
import random
from pathlib import Path

import numpy as np

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


def test_fit_writes_three_logistic_models_and_a_set_rule(tmp_path: Path) -> None:
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
    metrics = fc.run(cfg, 0)
    model = json.loads((tmp_path / "out" / "calibration.json").read_text())
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
