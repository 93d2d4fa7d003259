"""The GPU batch's step d on the CPU: encode_bench makes a store of N passages from a sample
(repeated under new ids), encodes it with `index encode --device cuda`'s encoder, reports the rate
and the 21M projection, and a rerun keeps the store and resumes (nothing left to encode)."""
from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest

from ambigqa_train.encode_bench import DEMO, main
from ambigqa_train.onnx_weights import ENCODERS_DIR

MODEL = "e5-small-v2-int8"
MISSING = None if (ENCODERS_DIR / MODEL / "model.onnx").exists() else f"needs models/encoders/{MODEL}: run scripts/assets {MODEL}"


def sample(path: Path, n: int) -> Path:
    """The demo corpus's first n passages, as a TSV with its header (not gzipped)."""
    with gzip.open(DEMO, "rt") as f:
        path.write_text("".join(f.readlines()[: n + 1]))
    return path


@pytest.mark.prerequisite(MISSING)
def test_a_store_of_n_passages_from_a_sample_is_encoded_and_timed(tmp_path: Path) -> None:
    passages = sample(tmp_path / "sample.tsv", 5)
    store, out = tmp_path / "store", tmp_path / "out" / "encode.json"
    args = ["--passages", str(passages), "--count", "12", "--store", str(store), "--device", "cpu", "--batch-size", "4", "--out", str(out)]
    main(args)
    result = json.loads(out.read_text())
    assert result["passages"] == 12 and result["encoded_this_run"] == 12
    assert result["passages_per_s"] > 0 and result["projected_21m_hours"] > 0
    assert result["device"] == "cpu" and result["card"] is None
    db = sqlite3.connect(str(store / "passages.sqlite"))
    try:
        ids = [r[0] for r in db.execute("SELECT id FROM passages ORDER BY rowid")]
        rows = db.execute("SELECT sum(last_rowid - first_rowid + 1) FROM dense_vectors WHERE model = ?", (MODEL,)).fetchone()[0]
    finally:
        db.close()
    assert len(ids) == 12 and len(set(ids)) == 12
    assert ids[5].endswith("#1") and ids[5].split("#")[0] == ids[0].split("#")[0], "the sample repeats under new ids"
    assert rows == 12
    # A rerun keeps the store it made and finds nothing left to encode.
    main(args)
    assert json.loads(out.read_text())["encoded_this_run"] == 0


def test_a_count_under_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="--count must be at least 1"):
        main(["--passages", str(tmp_path / "x.tsv"), "--count", "0", "--store", str(tmp_path / "s"), "--device", "cpu", "--out", str(tmp_path / "o.json")])
