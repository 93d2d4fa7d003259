"""The stage-2 mix: distractor reading rows keep the gold passage inside the budget and target
its answer; the mix refuses to run before the hard negatives exist."""
import json
import random
from pathlib import Path

import pytest

from ambigqa_train import data


def _group(i: int) -> dict[str, object]:
    filler = " ".join(f"w{j}" for j in range(150))
    return {"id": f"squad:{i}", "source": "squad", "question": f"who founded town {i}?", "answers": [f"Ada Lovelace {i}"],
            "positive": {"title": "Town", "text": f"{filler} the town was founded by Ada Lovelace {i} in 1840. {filler}"},
            "negatives": [{"title": f"Other {k}", "text": f"nothing relevant here {k}"} for k in range(3)]}


def test_distractor_reading_rows() -> None:
    rows = data.distractor_reading([_group(i) for i in range(40)], random.Random(0))
    assert len(rows) == 40
    firsts = set()
    for r in rows:
        parts = r["input"].split(data.SEP)
        assert parts[0] == r["question"] and len(parts) == 1 + 1 + data.READING_DISTRACTORS
        gold = [i for i, p in enumerate(parts[1:]) if r["target"] in p]
        assert len(gold) == 1 and gold[0] in (0, 1), r["input"]
        assert len(parts[1 + gold[0]].split(": ", 1)[1].split()) <= data.PASSAGE_WORDS
        firsts.add(gold[0])
    assert firsts == {0, 1}, "the gold passage should lead in some rows and follow a distractor in others"


def test_mix_needs_the_hard_negatives(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="ambigqa data build"):
        data.write_reader2(tmp_path)


def test_mix_counts(tmp_path: Path) -> None:
    def write(name: str, rows: list[dict[str, object]]) -> None:
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    write("spanseqgen2-train.jsonl", [{"id": "s2:1", "input": "q [SEP] p", "target": "a <SEP> b"}])
    write("qd-train.jsonl", [{"id": "qd:1", "input": "q [SEP] a", "target": "q?"}] * 3)
    write("reranker-groups-train.jsonl", [_group(i) for i in range(5)])
    counts = data.write_reader2(tmp_path)
    assert counts == {"reader2-train": data.READER2_STAGE2_REPEAT + 5 + 3, "reader2-train:reading": 5}  # no held-out groups here
    assert len((tmp_path / "reader2-train.jsonl").read_text().splitlines()) == counts["reader2-train"]
