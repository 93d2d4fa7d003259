"""Tiny training runs (resumed), ONNX export and parity; self-contained (no ../shared/data)."""
import json
from pathlib import Path

import pytest

from ambigqa_train import export_onnx, train_reranker, train_seq2seq
from ambigqa_train.common import load_config

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
READING = [
    ("who wrote the novel dracula", "Dracula: Dracula is an 1897 Gothic horror novel by Irish author Bram Stoker.", "Bram Stoker"),
    ("when did the titanic sink", "Titanic: RMS Titanic sank on 15 April 1912 in the North Atlantic Ocean.", "15 April 1912"),
    ("what is the capital of france", "Paris: Paris is the capital and most populous city of France.", "Paris"),
    ("who painted the mona lisa", "Mona Lisa: The Mona Lisa is a portrait painting by Leonardo da Vinci.", "Leonardo da Vinci"),
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("train")
    with (d / "s1.jsonl").open("w") as f:
        for q, p, a in READING:
            f.write(json.dumps({"input": f"{q} [SEP] {p}", "target": a}) + "\n")
    with (d / "rr.jsonl").open("w") as f:
        for i, (q, p, _) in enumerate(READING):
            t, x = p.split(": ", 1)
            f.write(json.dumps({"question": q, "title": t, "text": x, "label": 1}) + "\n")
            t, x = READING[(i + 1) % 4][1].split(": ", 1)
            f.write(json.dumps({"question": q, "title": t, "text": x, "label": 0}) + "\n")
    with (d / "groups.jsonl").open("w") as f:
        for i, (q, p, a) in enumerate(READING):
            t, x = p.split(": ", 1)
            negs = [dict(zip(("title", "text"), READING[(i + j) % 4][1].split(": ", 1))) for j in (1, 2)]
            f.write(json.dumps({"id": str(i), "question": q, "answers": [a], "positive": {"title": t, "text": x}, "negatives": negs}) + "\n")
    return d


def test_seq2seq_train_resume_export(workdir: Path) -> None:
    cfg = load_config(CONFIGS / "spanseqgen1-tiny.json") | {"train_file": str(workdir / "s1.jsonl"), "out": str(workdir / "s2s")}
    first = train_seq2seq.train(cfg | {"steps": 3}, seed=0)
    assert first["step"] == 3
    ckpt = workdir / "s2s/seed-0/checkpoint"
    assert (ckpt / "state.pt").exists()
    second = train_seq2seq.train(cfg, seed=0)  # resumes at 3, runs to 6
    assert second["step"] == cfg["steps"]

    out = workdir / "s2s-onnx"
    export_onnx.export_seq2seq(ckpt, out)
    names = {p.name for p in out.iterdir()}
    assert {"encoder_model.onnx", "tokenizer.json", "config.json", "generation_config.json"} <= names
    assert "decoder_model_merged.onnx" in names or {"decoder_model.onnx", "decoder_with_past_model.onnx"} <= names
    texts = [f"{q} [SEP] {p}" for q, p, _ in READING]
    assert export_onnx.encoder_parity(ckpt, out, texts) < 1e-4
    want, got = export_onnx.generation_parity(ckpt, out, texts[:2], max_new_tokens=8)
    assert want == got


def test_cross_encoder_train_export(workdir: Path) -> None:
    cfg = load_config(CONFIGS / "reranker-tiny.json") | {"train_file": str(workdir / "rr.jsonl"), "out": str(workdir / "rr")}
    assert train_reranker.train(cfg, seed=0)["step"] == cfg["steps"]
    ckpt = workdir / "rr/seed-0/checkpoint"
    out = workdir / "rr-onnx"
    export_onnx.export_cross_encoder(ckpt, out)
    assert (out / "model.onnx").exists()
    pairs = [(q, p) for q, p, _ in READING]
    assert export_onnx.cross_encoder_parity(ckpt, out, pairs) < 1e-4


def test_cross_encoder_listwise_groups(workdir: Path) -> None:
    """Groups of (positive, BM25 negatives) train with a softmax over each group; the loss falls."""
    import torch
    from transformers import BertForSequenceClassification, PreTrainedTokenizerFast

    cfg = load_config(CONFIGS / "reranker-tiny.json") | {
        "train_file": str(workdir / "groups.jsonl"), "out": str(workdir / "rr-groups"), "batch_size": 4, "steps": 12, "lr": 3e-4}
    result = train_reranker.train(cfg, seed=0)
    assert result["step"] == 12
    ckpt = workdir / "rr-groups/seed-0/checkpoint"
    model = BertForSequenceClassification.from_pretrained(str(ckpt)).eval()
    tok = PreTrainedTokenizerFast.from_pretrained(str(ckpt))
    groups = [json.loads(line) for line in (workdir / "groups.jsonl").read_text().splitlines()]
    with torch.no_grad():
        for g in groups:
            pairs = train_reranker.as_pairs(g, None)
            logits = model(**train_reranker.encode(tok, pairs, 64)).logits.squeeze(-1)
            assert int(logits.argmax()) == 0, f"the positive should rank first for {g['question']!r}"
