"""train/splits/reader-tune.txt is what `data tune-split` writes: AmbigNQ train ids only, so the
extractive reader's settings are never chosen on an eval-300 (AmbigNQ dev) question (needs
../shared/data)."""
import json
from pathlib import Path

import pytest

from ambigqa_train import data

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
pytestmark = pytest.mark.skipif(not (SHARED / "ambignq/train_light.json").exists(),
                                reason=f"{SHARED} absent: the tuning split test needs ../shared/data")


def test_tune_split_is_current_and_train_only() -> None:
    shipped = (data.SPLITS_DIR / "reader-tune.txt").read_text().split()
    records, _ = data.qa_feedback_ambig(SHARED, data.ambignq_train(SHARED))
    assert len(shipped) > 0
    assert shipped == sorted({r.qid for r in records})
    train_ids = {r["id"] for r in json.loads((SHARED / "ambignq/train_light.json").read_text())}
    dev_ids = {r["id"] for r in json.loads((SHARED / "ambignq/dev_light.json").read_text())}
    assert set(shipped) <= train_ids
    assert not set(shipped) & dev_ids
