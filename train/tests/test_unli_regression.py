"""UNLI's yardstick: u-SNLI rows are read as (premise, hypothesis, probability) and scored by
Pearson r and MSE."""
from pathlib import Path

import numpy as np

from ambigqa_train.unli_regression import read_unli, scores


def test_read_unli_keeps_the_probability_label(tmp_path: Path) -> None:
    path = tmp_path / "dev.csv"
    path.write_text('id,pre,hyp,nli,unli\n1,"A man, outside.",A man sleeps.,0,0.0415\n2,A dog.,An animal.,2,0.98\n')
    rows = read_unli(path)
    assert rows == [{"pre": "A man, outside.", "hyp": "A man sleeps.", "unli": 0.0415}, {"pre": "A dog.", "hyp": "An animal.", "unli": 0.98}]
    assert read_unli(path, limit=1) == rows[:1]


def test_scores_are_pearson_spearman_and_mse() -> None:
    gold = np.array([0.1, 0.5, 0.9])
    s = scores(gold * 0.5 + 0.1, gold)
    assert abs(s["pearson"] - 1) < 1e-9 and abs(s["spearman"] - 1) < 1e-9
    assert abs(s["mse"] - np.mean((gold * 0.5 + 0.1 - gold) ** 2)) < 1e-12
