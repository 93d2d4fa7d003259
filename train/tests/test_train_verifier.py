"""The answer verifier: its warm start is the shipped extractive reader's selection head, its pairs
read "[SEP]" as the separator, and train_verifier trains fold by fold, writes out-of-fold logits
and exports the served int8 model; fit_calibration stacks those logits on the answer model."""
import json
from pathlib import Path

import pytest
import torch

from ambigqa_train import train_verifier as tv
from ambigqa_train.extractive import from_quantized_onnx
from ambigqa_train.warm_start import cross_encoder_from_extractive

ROOT = Path(__file__).resolve().parents[2]
EXTRACTIVE = ROOT / "assets" / "models" / "extractive"


def test_warm_start_scores_a_pair_as_the_readers_selection_head() -> None:
    model, tok = cross_encoder_from_extractive(EXTRACTIVE)
    reader, _ = from_quantized_onnx(EXTRACTIVE)
    model.eval()
    reader.eval()
    enc = tok(["who won the 1989 world series"], [tv.pair_text({"title": "Oakland Athletics [SEP] 1989 World Series", "text": "the Athletics swept the Giants"})], return_tensors="pt")
    ids = enc["input_ids"][0].tolist()
    # The literal "[SEP]" in the pair is the separator token, as the server's tokenizer reads it.
    assert ids.count(tok.sep_token_id) == 3 and "token_type_ids" in enc
    with torch.no_grad():
        got = model(**enc).logits[0, 0]
        cls = reader.bert(**enc).last_hidden_state[:, 0]
        want = reader.qa_classifier(torch.tanh(cls))[0, 0]
    assert abs(float(got - want)) < 1e-5


def pairs() -> list[dict]:
    rows = []
    for s, name in enumerate(("reader-tune", "asqa-tune")):
        for i in range(8):
            right = i % 2 == 0
            rows.append({"id": f"{name}-{i // 2}", "set": name, "read": 20, "rank": i % 2, "answer": "paris" if right else "lyon", "question": "what is the capital of france",
                         "title": f"{'Paris' if right else 'Lyon'} [SEP] France", "text": "Paris is the capital and largest city of France", "label": int(right)})
    return rows


def test_train_verifier_folds_out_of_fold_logits_and_the_served_model(tmp_path: Path) -> None:
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pairs()))
    cfg = {"pairs_file": str(tmp_path / "pairs.jsonl"), "sets": ["reader-tune", "asqa-tune"], "out": str(tmp_path / "ckpt"), "model_out": str(tmp_path / "verifier"),
           "oof_out": str(tmp_path / "oof.jsonl"), "metrics_out": str(tmp_path / "metrics.json"),
           "train": {"warm_start": "minilm", "max_len": 32, "batch_size": 4, "lr": 1e-4, "warmup": 1, "epochs": 1, "log_every": 1}}
    metrics = tv.run(cfg, 0)
    oof = [json.loads(line) for line in (tmp_path / "oof.jsonl").read_text().splitlines()]
    # Every pair scored once, by the model that did not train on its set.
    assert sorted((o["id"], o["rank"]) for o in oof) == sorted((r["id"], r["rank"]) for r in pairs())
    assert set(metrics["folds"]) == {"reader-tune", "asqa-tune"} and metrics["pairs"] == 16
    served = sorted(p.name for p in (tmp_path / "verifier").iterdir())
    assert "model_quantized.onnx" in served and "tokenizer.json" in served and "model.onnx" not in served
    # Done folds are not redone: a second run only rescores.
    stamp = (tmp_path / "ckpt" / "without-asqa-tune" / "onnx" / "model_quantized.onnx").stat().st_mtime
    tv.run(cfg, 0)
    assert (tmp_path / "ckpt" / "without-asqa-tune" / "onnx" / "model_quantized.onnx").stat().st_mtime == stamp


def test_a_pairs_file_with_an_unknown_set_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pairs.jsonl").write_text(json.dumps({**pairs()[0], "set": "eval-300"}) + "\n")
    with pytest.raises(SystemExit, match="eval-300"):
        tv.run({"pairs_file": str(tmp_path / "pairs.jsonl"), "sets": ["reader-tune"], "out": str(tmp_path), "train": {"max_len": 32}}, 0)
