"""A parity fixture for the TypeScript extractive reader: a tiny `ExtractiveReader` (random weights
spread wide, so that spans do not tie), the project's WordPiece tokenizer, its ONNX export, and
PyTorch's best spans (`extractive.best_spans`) for a few questions in reference.json.

`PYTHONPATH=train python train/tests/extractive_fixture.py --out DIR`

The passages exercise what the TypeScript side re-implements: BERT's word splitting (punctuation,
accents, CJK, `$`), truncation of the passage to `max_len` tokens, and spans over several passages.
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch
from transformers import BertConfig

from ambigqa_train.export_onnx import export_extractive
from ambigqa_train.extractive import ExtractiveReader, best_spans, encode, passage_text
from ambigqa_train.warm_start import load_cross_encoder_tokenizer

MAX_LEN = 48
CASES = [
    ("who played in the world series in 1989?", [
        ("1989 World Series", "The 1989 World Series was played between the Oakland Athletics and the San Francisco Giants; Oakland swept it, 4–0."),
        ("Loma Prieta earthquake", "The Loma Prieta earthquake struck on October 17, 1989, during game 3's warm-up at Candlestick Park."),
    ]),
    ("what does the café in São Paulo sell for $5?", [
        ("Café Zé (São Paulo)", "Café Zé sells pão de queijo for $5.00 (about R$25) — a U.S.-style \"deal\"; its owner, José Müller, opened it in 1998."),
    ]),
    ("what is the capital of japan", [
        ("Tokyo", "Tokyo (東京) is the capital of Japan and the seat of its government, home to the Emperor and the National Diet since 1869."),
        ("Kyoto", "Kyoto was the imperial capital of Japan for more than a thousand years, until the court moved to Tokyo in the Meiji era, " * 3),
        ("Osaka", "Osaka is a large port city."),
    ]),
]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="train/tests/extractive_fixture.py")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    torch.manual_seed(0)
    torch.set_num_threads(2)
    tok = load_cross_encoder_tokenizer()
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, initializer_range=0.5)
    model = ExtractiveReader(config).eval()
    with tempfile.TemporaryDirectory() as ckpt:
        model.save_pretrained(ckpt)
        tok.save_pretrained(ckpt)
        export_extractive(Path(ckpt), a.out, int8=False)
    cases = []
    with torch.no_grad():
        for question, passages in CASES:
            texts = [passage_text(t, x) for t, x in passages]
            enc = encode(tok, [question] * len(texts), texts, MAX_LEN)
            start, end, relevance = model(**enc.features)
            spans = best_spans(enc, start, end, relevance)
            cases.append({
                "question": question, "passages": [{"title": t, "text": x} for t, x in passages],
                "input_ids": [ids[: int(m.sum())] for ids, m in zip(enc.features["input_ids"].tolist(), enc.features["attention_mask"])],
                "spans": [{"passage": s.passage, "text": s.text, "score": s.score} for s in spans[:5]],
            })
    (a.out / "reference.json").write_text(json.dumps({"max_len": MAX_LEN, "cases": cases}, indent=1, ensure_ascii=False) + "\n")
    print(f"extractive fixture: {a.out}")


if __name__ == "__main__":
    main()
