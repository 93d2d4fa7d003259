"""A parity fixture for the TypeScript extractive reader: a tiny `ExtractiveReader` (random weights
spread wide, so that spans do not tie), the project's WordPiece tokenizer, its ONNX export, and
PyTorch's best spans (`extractive.best_spans`) for a few questions in reference.json; and in
`mpnet/` the same on a tiny MPNet encoder, whose tokenizer writes pairs as all-mpnet-base-v2's
does (`<s> q </s></s> p </s>`: MiniLM's vocabulary with MPNet's special tokens at ids 0-2).

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
from transformers import BertConfig, MPNetConfig, PreTrainedModel, PreTrainedTokenizerFast

from ambigqa_train.export_onnx import export_extractive
from ambigqa_train.extractive import ExtractiveReader, MPNetExtractiveReader, best_spans, encode, passage_text, with_reader_inputs
from ambigqa_train.warm_start import load_cross_encoder_tokenizer, minilm_dir

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


def mpnet_tokenizer(folder: Path) -> PreTrainedTokenizerFast:
    """MiniLM's WordPiece with all-mpnet-base-v2's special tokens and pair template: `<s>`, `<pad>`,
    `</s>` at ids 0, 1, 2 (transformers' MPNet takes id 1 for padding whatever the config says)."""
    spec = json.loads((minilm_dir() / "tokenizer.json").read_text())
    renames = {"[PAD]": "<s>", "[unused0]": "<pad>", "[unused1]": "</s>"}
    spec["model"]["vocab"] = {renames.get(k, k): v for k, v in spec["model"]["vocab"].items()}
    spec["added_tokens"] = [{**t, "content": renames.get(t["content"], t["content"])} for t in spec["added_tokens"]]
    for token in ("<pad>", "</s>"):
        spec["added_tokens"].append({"id": spec["model"]["vocab"][token], "content": token, "single_word": False, "lstrip": False,
                                     "rstrip": False, "normalized": False, "special": True})
    spec["post_processor"] = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": True, "add_prefix_space": False}
    spec["padding"] = spec["truncation"] = None
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False))
    tok = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"), bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                  cls_token="<s>", pad_token="<pad>", unk_token="[UNK]", mask_token="[MASK]", model_max_length=512)
    return with_reader_inputs(tok, MPNetConfig())


def tiny_mpnet(tok: PreTrainedTokenizerFast, initializer_range: float = 0.02) -> MPNetExtractiveReader:
    """A 2-layer MPNet reader on `tok` (mpnet_tokenizer's): random weights, seeded by the caller."""
    return MPNetExtractiveReader(MPNetConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                             intermediate_size=64, max_position_embeddings=130, initializer_range=initializer_range,
                                             pad_token_id=1, bos_token_id=0, eos_token_id=2))


def write_fixture(model: PreTrainedModel, tok: PreTrainedTokenizerFast, out: Path) -> None:
    """The model exported (fp32) into out, with PyTorch's inputs and best spans in reference.json."""
    model.eval()
    with tempfile.TemporaryDirectory() as ckpt:
        model.save_pretrained(ckpt)
        tok.save_pretrained(ckpt)
        export_extractive(Path(ckpt), out, int8=False)
    cases = []
    with torch.no_grad():
        for question, passages in CASES:
            texts = [passage_text(t, x) for t, x in passages]
            enc = encode(tok, [question] * len(texts), texts, MAX_LEN)
            start, end, relevance = model(**enc.features)
            spans = best_spans(enc, start, end, relevance, title_lengths=[len(t) for t, _ in passages])
            cases.append({
                "question": question, "passages": [{"title": t, "text": x} for t, x in passages],
                "input_ids": [ids[: int(m.sum())] for ids, m in zip(enc.features["input_ids"].tolist(), enc.features["attention_mask"])],
                "spans": [{"passage": s.passage, "text": s.text, "score": s.score} for s in spans[:5]],
            })
    (out / "reference.json").write_text(json.dumps({"max_len": MAX_LEN, "cases": cases}, indent=1, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="train/tests/extractive_fixture.py")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    torch.manual_seed(0)
    torch.set_num_threads(2)
    # mpnet/ first: the folder counts as made once the top reference.json is there.
    with tempfile.TemporaryDirectory() as tmp:
        tok = mpnet_tokenizer(Path(tmp))
        write_fixture(tiny_mpnet(tok, initializer_range=0.5), tok, a.out / "mpnet")
    tok = with_reader_inputs(load_cross_encoder_tokenizer(), BertConfig())
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, initializer_range=0.5)
    write_fixture(ExtractiveReader(config), tok, a.out)
    print(f"extractive fixture: {a.out}")


if __name__ == "__main__":
    main()
