"""A span lies in a passage's title or in its text, never across `title: text`'s separator (issue
47: a reader returned "Dominic Janes Dominic Janes" from a passage titled "Dominic Janes" whose
text opens with the name): neither the training labels nor co-training's examples allow one."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from ambigqa_train.cotrain import full_examples
from ambigqa_train.extractive import answer_token_spans, passage_text


def words(text: str) -> list[tuple[int, int]]:
    """Whitespace tokens' character offsets (the labeller needs offsets, not a tokenizer)."""
    out, at = [], 0
    for w in text.split(" "):
        out.append((at, at + len(w)))
        at += len(w) + 1
    return out


def test_labels_stay_in_one_field() -> None:
    text = passage_text("Dominic Janes", "Dominic Janes is an American actor, known for Dexter.")
    offsets = words(text)
    mask = torch.ones(len(offsets), dtype=torch.bool)
    cut = len("Dominic Janes")
    # "Janes: Dominic" reads across the separator; "Dominic Janes" twice, once in each field.
    assert answer_token_spans(text, offsets, mask, ["Janes: Dominic"]) == [(1, 2)]
    assert answer_token_spans(text, offsets, mask, ["Janes: Dominic"], cut) == []
    both = answer_token_spans(text, offsets, mask, ["Dominic Janes"], cut)
    assert both == [(0, 1), (2, 3)]


def test_cotrain_needs_each_passage_title(tmp_path: Path) -> None:
    row = {"id": "x:1", "source": "x", "question": "who is dominic janes",
           "input": "who is dominic janes [SEP] Dominic Janes: Dominic Janes is an actor.", "answers": [["Dominic Janes"]]}
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps(row) + "\n")
    with pytest.raises(ValueError, match="ambigqa data build"):
        full_examples(old, None)
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps(row | {"titles": ["Dominic Janes"]}) + "\n")
    [ex] = full_examples(new, None)
    assert ex["titles"] == ["Dominic Janes"] and ex["passages"] == ["Dominic Janes: Dominic Janes is an actor."]
