"""A span keeps to one field of `title: text`: the title, the title's echo at the text's start, the
rest of the text (issue 47: a reader returned "Dominic Janes Dominic Janes" from the demo store's
passage whose text opens "Dominic Janes Dominic Janes (born"): neither the training labels nor
co-training's examples allow one across."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from ambigqa_train.cotrain import full_examples
from ambigqa_train.extractive import answer_token_spans, field_at, passage_text, without_citations


def words(text: str) -> list[tuple[int, int]]:
    """Whitespace tokens' character offsets (the labeller needs offsets, not a tokenizer)."""
    out, at = [], 0
    for w in text.split(" "):
        out.append((at, at + len(w)))
        at += len(w) + 1
    return out


def test_labels_stay_in_one_field() -> None:
    # The demo store's passage as it is held: the title's echo opens the text, then the article.
    title = "Dominic Janes"
    text = passage_text(title, "Dominic Janes Dominic Janes (born 1994) is an American actor.")
    offsets = words(text)
    mask = torch.ones(len(offsets), dtype=torch.bool)
    # "Janes: Dominic" reads across the separator, "Janes Dominic" from the echo into the article.
    assert answer_token_spans(text, offsets, mask, ["Janes: Dominic", "Janes Dominic"]) == [(1, 2), (3, 4)]
    assert answer_token_spans(text, offsets, mask, ["Janes: Dominic", "Janes Dominic"], len(title)) == []
    # The name in the title, in the echo and in the article: three labels.
    assert answer_token_spans(text, offsets, mask, ["Dominic Janes"], len(title)) == [(0, 1), (2, 3), (4, 5)]


def test_field_at_finds_an_echo_only_where_the_subject_comes_again() -> None:
    def echo(title: str, text: str) -> int:
        at = field_at(passage_text(title, text), len(title))
        return sum(at(i) == 1 for i in range(len(title) + 2 + len(text)))

    for title, text in [("Fryingpan River", "Fryingpan River The Fryingpan River is a tributary"), ("The Sound of Music", "The Sound of Music The Sound of Music is"),
                        ("Unchained Melody", 'Unchained Melody "Unchained Melody" is a 1955 song')]:
        assert echo(title, text) == len(title), title
    for title, text in [("Windows Media Player", "Windows Media Player 11 is available"), ("Comcast", "Comcast Corporation, formerly"), ("Sun", "Sun Sunday"),
                        ("Dominic Janes", "Dominic Janes (born 1994)")]:
        assert echo(title, text) == 0, title


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


def test_citation_marks_are_not_part_of_a_span() -> None:
    # Spans the reader returned on the second set and the tuning runs (issue 47's closing notes).
    assert without_citations("Ouagadougou[2]") == "Ouagadougou"
    assert without_citations("Sylva, North Carolina,[13]") == "Sylva, North Carolina"
    assert without_citations("[4] Super Bowl 50") == "Super Bowl 50"
    assert without_citations("Richard Petty,[5] Dale Earnhardt") is None
    assert without_citations("Louis XIV [of France]") == "Louis XIV [of France]"
