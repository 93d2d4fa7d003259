"""The training sets never hold an eval-300 question (needs ../shared/data)."""
import json
from pathlib import Path

import pytest

from ambigqa_train import data

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
# Skips without ../shared/data; fails under AMBIGQA_TEST_REQUIRE_ALL=1 (conftest.py).
pytestmark = pytest.mark.prerequisite(None if (SHARED / "splits/eval-300.txt").exists()
                                      else f"needs {SHARED / 'splits/eval-300.txt'} (the shared data folder beside the project), which is absent")


def test_eval300_never_in_training(tmp_path: Path) -> None:
    ev = data.load_eval300(SHARED)
    # eval-300 and the project's second set (324 more AmbigNQ dev ids), both held out.
    assert len(data.load_eval300(SHARED, second=None).ids) == 300 and len(ev.ids) == 624
    counts = data.build(SHARED, tmp_path, squad_limit=3000)
    assert counts["reranker-train"] > 0 and counts["spanseqgen1-train"] > 0
    for f in tmp_path.glob("*.jsonl"):
        for line in f.open():
            r = json.loads(line)
            q = r.get("question") or r["input"].split(data.SEP)[0]
            assert not ev.excludes(r.get("qid", r["id"].split(":")[-1]), q), (f.name, r["id"])


def test_eval300_detects_its_questions() -> None:
    ev = data.load_eval300(SHARED)
    dev = json.loads((SHARED / "ambignq/dev_light.json").read_text())
    inside = next(r for r in dev if r["id"] in ev.ids)
    assert ev.excludes(None, inside["question"].upper() + "?")
    assert ev.excludes(inside["id"], "anything")
