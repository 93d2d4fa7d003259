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


def test_fit_writes_the_models_and_a_set_rule(tmp_path: Path) -> None:
    cfg, tune = synthetic(tmp_path)
    metrics = fc.run(cfg, 0)
    model = json.loads((tmp_path / "out" / "calibration.json").read_text())
    assert "verifier" not in model, "no cross-encoder logits: no stack"
    for key, n in (("answer", len(fc.ANSWER_FEATURES)), ("questionOnly", 4), ("ambiguity", 1)):
        assert len(model[key]["weights"]) == len(model[key]["mean"]) == len(model[key]["scale"]) == len(model[key]["features"]) == n
    assert model["questionOnly"]["encoder"] == "e5-small-v2-int8"
    assert "words" not in model["questionOnly"], "questions without text: the embedding alone"
    # The ambiguity probability is the question-only model as it is.
    assert model["ambiguity"]["features"] == ["questionLogit"] and model["ambiguity"]["weights"] == [1.0] and model["ambiguity"]["bias"] == 0.0
    # Equal at both counts, so the smaller is read; the verifier finds the third candidate, so sets of up to 3.
    assert model["read"] == 5 and model["maxAnswers"] == 3 and model["minConfidence"] in (0.3, 0.5)
    assert metrics["chosen"]["f1"]["all"] > 0.95
    assert metrics["by_read"]["5"]["verifier"]["cross_validated_auroc"] > 0.9
    assert metrics["by_read"]["5"]["ambiguity"]["tune_auroc"] > 0.7
    assert set(metrics["chosen"]["by_set"]) == {"reader-tune", "asqa-tune"}
    # The one-answer rule is judged on the natural mix with an interval around its gain.
    gain = metrics["chosen"]["detector_gain"]
    assert gain["interval"][0] <= gain["natural_mix"] <= gain["interval"][1] and gain["adopted"] == (gain["interval"][0] > 0) == model["detector"]
    dev = metrics["question_only"]["ambignq_dev_outside_eval300"]
    assert dev["questions"] == 10 and dev["auroc"] > 0.7 and 0 <= dev["ece"] <= 1


def test_natural_weights_give_the_asked_multi_share() -> None:
    rows = [{"multi": True}] * 9 + [{"multi": False}]
    w = fc.natural_weights(rows, 0.5)
    assert abs(w[:9].sum() - w[9]) < 1e-12, "half the weight on the one single-answer question"
    assert (fc.natural_weights([{"multi": True}] * 3, 0.5) == 1).all()
    f = fc.f1_answer([{"multi": True, "golds": [[["a"], ["b"]]]}, {"multi": False, "golds": [[["c"]]]}], [["a"], ["c"]], np.array([1.0, 3.0]))
    assert abs(f["all"] - (2 / 3 * 1 + 1.0 * 3) / 4) < 1e-12 and abs(f["multi"] - 2 / 3) < 1e-12


def test_the_question_only_model_reads_the_words_when_the_questions_have_text(tmp_path: Path) -> None:
    """Multi-answer questions say "when" and "first"; the words carry the signal the (noise)
    embedding does not, and the JSON holds the vocabulary, idf, weights and reference logits."""
    rng = random.Random(1)
    words = ["when did", "who was the first", "when was", "who won"]
    train = [{"id": f"t{i}", "source": "ambignq-train", "eval300": False, "label": i % 2 == 0, "embedding": [rng.gauss(0, 1) for _ in range(3)],
              "text": f"{words[(i % 2) * 2 + (i // 2) % 2]} thing {i % 7}"} for i in range(120)]
    cfg = {"Cs": [0.1, 1.0], "folds": 3, "embedding_weights": [0.05, 0.2]}
    as_json, logits, choice = fc.fit_question_only(train, cfg, 0)
    assert {(g["C"], g["embedding_weight"]) for g in choice["grid"]} == {(0.1, 0.05), (0.1, 0.2), (1.0, 0.05), (1.0, 0.2)}
    w = as_json["words"]
    assert w["ngrams"] == 2 and len(w["terms"]) == len(w["idf"]) == len(w["weights"]) == choice["terms"] > 0
    assert "when did" in w["terms"] and len(w["checks"]) == 10
    y = np.array([float(r["label"]) for r in train])
    assert fc.roc_auc_score(y, logits(train)) > 0.95
    # The embedding's scale carries its weight: the JSON's logit is bias + Σ w (x - mean) / scale + words.
    assert abs(as_json["scale"][0] * as_json["embeddingWeight"] - np.std([r["embedding"][0] for r in train])) < 1e-9


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


def test_ambiguity_only_keeps_the_answer_model_and_the_set_rule(tmp_path: Path) -> None:
    cfg, _ = synthetic(tmp_path)
    with pytest.raises(SystemExit, match="does not exist"):
        fc.run(cfg, 0, ambiguity_only=True)
    fc.run(cfg, 0)
    path = tmp_path / "out" / "calibration.json"
    before = json.loads(path.read_text())
    before["answer"]["bias"] = 123.0  # marks the answer model as the one kept
    before["questionOnly"]["bias"] = 123.0
    path.write_text(json.dumps(before))
    fc.run(cfg, 0, ambiguity_only=True)
    after = json.loads(path.read_text())
    assert after["answer"]["bias"] == 123.0 and after["minConfidence"] == before["minConfidence"] and after["read"] == before["read"]
    assert after["questionOnly"]["bias"] != 123.0, "the question-only model is refit"
    assert after["fit"]["ambiguity_only"] is True
