"""UNLI's yardstick: u-SNLI rows are read as (premise, hypothesis, probability) and scored by
Pearson r and MSE; a fine-tuning run resumes from its checkpoint."""
from pathlib import Path

import numpy as np
import torch
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

from ambigqa_train.unli_regression import read_unli, scores, train
from ambigqa_train.warm_start import load_cross_encoder_tokenizer


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


def tiny_encoder() -> tuple[BertModel, PreTrainedTokenizerFast]:
    tok = load_cross_encoder_tokenizer()
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    return BertModel(config, add_pooling_layer=False), tok


def test_a_run_stopped_after_a_checkpoint_resumes_and_ends_as_an_uninterrupted_one(tmp_path: Path) -> None:
    words = ["a dog runs", "a cat sleeps", "two men talk", "a child plays", "the sun sets", "a bird sings"]
    lines = ["id,pre,hyp,nli,unli"] + [f"{i},{words[i % 6]} in the park,{words[(i * 5 + 1) % 6]},1,{(i * 37 % 100) / 100}" for i in range(12)]
    data = tmp_path / "data"
    data.mkdir()
    (data / "dev.csv").write_text("\n".join(lines) + "\n")
    (data / "test.csv").write_text("\n".join(lines[:7]) + "\n")
    base = {"data_dir": str(data), "train_split": "dev", "test_split": "test", "encoder": "tiny", "max_len": 24, "batch_size": 4, "lr": 1e-3, "warmup": 1, "epochs": 2, "save_every": 100}

    whole = train({**base, "out": str(tmp_path / "whole")}, 0, tiny_encoder())
    assert whole is not None and whole["steps"] == 6
    # Stopped at step 4 (in the second epoch) as a kill after that checkpoint would leave it.
    assert train({**base, "out": str(tmp_path / "split"), "stop_at": 4}, 0, tiny_encoder()) is None
    assert not (tmp_path / "split" / "seed-0" / "metrics.json").exists()
    resumed = train({**base, "out": str(tmp_path / "split")}, 0, tiny_encoder())
    assert resumed is not None and resumed["steps"] == 6
    assert resumed["test"] == whole["test"]
    # Another config does not resume a checkpoint made with this one.
    other = train({**base, "out": str(tmp_path / "split"), "lr": 5e-4}, 0, tiny_encoder())
    assert other is not None and other["test"] != whole["test"]
