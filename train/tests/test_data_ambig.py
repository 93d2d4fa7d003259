"""SpanSeqGen stage 2 and QD sets: no eval-300 question, ` <SEP> ` targets, disjoint held-out
lists (needs ../shared/data)."""
import json
from pathlib import Path
from typing import Any

import pytest

from ambigqa_train import data

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
# Skips without ../shared/data; fails under AMBIGQA_TEST_REQUIRE_ALL=1 (conftest.py).
pytestmark = pytest.mark.prerequisite(None if (SHARED / "splits/eval-300.txt").exists()
                                      else f"needs {SHARED / 'splits/eval-300.txt'} (the shared data folder beside the project), which is absent")
NAMES = ("spanseqgen2", "qd")


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.open()]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    out = tmp_path_factory.mktemp("ambig")
    counts = data.build(SHARED, out, sets=NAMES)
    return out, counts


def test_counts_and_sources(built: tuple[Path, dict[str, int]]) -> None:
    out, counts = built
    for name in NAMES:
        assert counts[f"{name}-train"] > 0 and counts[f"{name}-heldout"] > 0
    for src in ("asqa-dev", "qa-feedback", "asqa-train"):
        assert counts.get(f"spanseqgen2-train:{src}", 0) > 0, src
    for src in ("asqa-dev", "asqa-train", "ambignq-train"):
        assert counts.get(f"qd-train:{src}", 0) > 0, src
    dev_train = set((SHARED / "splits/asqa-dev-train.txt").read_text().split())
    for name in NAMES:
        for part in ("train", "heldout"):
            for r in _read(out / f"{name}-{part}.jsonl"):
                if r["source"] == "asqa-dev":
                    assert r["qid"] in dev_train, r["id"]


def test_eval300_never_in_new_sets(built: tuple[Path, dict[str, int]]) -> None:
    out, _ = built
    ev = data.load_eval300(SHARED)
    assert ev.disambiguated, "eval-300 disambiguated questions not loaded"
    n = 0
    for name in NAMES:
        for part in ("train", "heldout"):
            for r in _read(out / f"{name}-{part}.jsonl"):
                n += 1
                prompt = r["input"].split(data.SEP)[0]
                assert r["qid"] not in ev.ids and r["id"].split(":")[1] not in ev.ids, r["id"]
                assert not ev.excludes(r["qid"], r["question"]) and not ev.excludes(None, prompt), r["id"]
                assert not ev.excludes_related(None, r["question"]), r["id"]
                if name == "qd":
                    assert not ev.excludes_related(None, r["target"]), r["id"]
    assert n > 0


def test_excludes_related_catches_disambiguated_questions() -> None:
    ev = data.load_eval300(SHARED)
    dev = json.loads((SHARED / "ambignq/dev_light.json").read_text())
    r = next(r for r in dev if r["id"] in ev.ids and r["annotations"][0]["type"] == "multipleQAs")
    dq = r["annotations"][0]["qaPairs"][0]["question"].split("|")[0]
    assert ev.excludes_related(None, "some other prompt?", dq.upper())
    assert ev.excludes_related(None, r["question"] + "?")
    assert not ev.excludes_related(None, "who wrote the novel dracula")


def test_targets_and_inputs(built: tuple[Path, dict[str, int]]) -> None:
    out, _ = built
    multi = 0
    for r in _read(out / "spanseqgen2-train.jsonl") + _read(out / "spanseqgen2-heldout.jsonl"):
        assert r["answers"] and all(r["answers"]), r["id"]
        assert r["target"] == " <SEP> ".join(a[0] for a in r["answers"]), r["id"]
        assert r["target"].count("<SEP>") == len(r["answers"]) - 1, r["id"]
        assert "[SEP]" not in r["target"], r["id"]
        parts = r["input"].split(data.SEP)
        assert parts[0] == r["question"] and 2 <= len(parts) <= 1 + data.MAX_PASSAGES, r["id"]
        assert all(len(p.split()) <= data.PASSAGE_WORDS + 30 for p in parts[1:]), r["id"]  # + title
        multi += len(r["answers"]) > 1
    assert multi > 100
    with_others = 0
    for r in _read(out / "qd-train.jsonl") + _read(out / "qd-heldout.jsonl"):
        parts = r["input"].split(data.SEP)
        assert len(parts) >= 2 and parts[0] == r["question"] and parts[1] == r["answer"], r["id"]
        assert "|" not in r["target"] and r["target"].strip() == r["target"] and r["target"], r["id"]
        assert "<SEP>" not in parts[0] and "<SEP>" not in parts[1], r["id"]
        if len(parts) > 2 and "<SEP>" in parts[2]:
            assert all(x.strip() for x in parts[2].split(" <SEP> ")), r["id"]
            with_others += 1
    assert with_others > 1000


def test_heldout_lists_disjoint_from_train(built: tuple[Path, dict[str, int]]) -> None:
    out, counts = built
    held_questions: set[str] = set()
    train_questions: set[str] = set()
    for name in NAMES:
        listed = data.read_split(name)
        train = _read(out / f"{name}-train.jsonl")
        held = _read(out / f"{name}-heldout.jsonl")
        assert not listed & {r["id"] for r in train}, name
        assert {r["id"] for r in held} <= listed, name
        assert len({r["id"] for r in train + held}) == len(train) + len(held), f"{name}: duplicate ids"
        share = len(held) / (len(train) + len(held))
        assert 0.02 < share < 0.06, (name, share)
        held_questions |= {data.norm_question(r["question"]) for r in held}
        train_questions |= {data.norm_question(r["question"]) for r in train}
    # By question: a question is on one side in both sets, whatever its source.
    assert not held_questions & train_questions


def test_second_set_is_held_out_too(built: tuple[Path, dict[str, int]]) -> None:
    out, _ = built
    second = set(data.SECOND_SET.read_text().split())
    assert len(second) == 324 and second <= data.load_eval300(SHARED).ids
    assert not second & data.load_eval300(SHARED, second=None).ids, "the second set lies outside eval-300"
    seen = {r["qid"] for name in NAMES for part in ("train", "heldout") for r in _read(out / f"{name}-{part}.jsonl")}
    assert seen and not seen & second
