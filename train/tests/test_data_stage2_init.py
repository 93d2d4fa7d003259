"""Stage 2 starts from a stage-1 checkpoint (`init`), on answer-set targets; self-contained."""
import json
from pathlib import Path

import pytest
import torch

from ambigqa_train import train_seq2seq
from ambigqa_train.common import load_config
from ambigqa_train.data import ANSWER_SEP, SEP

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
STAGE1 = [
    ("who wrote the novel dracula", "Dracula: Dracula is an 1897 Gothic horror novel by Irish author Bram Stoker.", "Bram Stoker"),
    ("when did the titanic sink", "Titanic: RMS Titanic sank on 15 April 1912 in the North Atlantic Ocean.", "15 April 1912"),
    ("what is the capital of france", "Paris: Paris is the capital and most populous city of France.", "Paris"),
    ("who painted the mona lisa", "Mona Lisa: The Mona Lisa is a portrait painting by Leonardo da Vinci.", "Leonardo da Vinci"),
]
STAGE2 = [
    ("when did the simpsons first air",
     ["The Simpsons: first aired as shorts on The Tracey Ullman Show on April 19, 1987.",
      "The Simpsons: the half-hour series premiered on December 17, 1989."], ["April 19, 1987", "December 17, 1989"]),
    ("who plays the doctor in doctor who",
     ["Doctor Who: Jodie Whittaker played the Thirteenth Doctor.", "Doctor Who: Peter Capaldi played the Twelfth Doctor."],
     ["Jodie Whittaker", "Peter Capaldi"]),
]


def _state(path: Path) -> dict[str, torch.Tensor]:
    model, _ = train_seq2seq.load_seq2seq(path)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.fixture(scope="module")
def stage1(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("stage2")
    with (d / "s1.jsonl").open("w") as f:
        for q, p, a in STAGE1:
            f.write(json.dumps({"input": q + SEP + p, "target": a}) + "\n")
    with (d / "s2.jsonl").open("w") as f:
        for q, ps, answers in STAGE2:
            f.write(json.dumps({"input": SEP.join([q, *ps]), "target": ANSWER_SEP.join(answers)}) + "\n")
    # Short runs (each checkpoint save writes ~0.3 GB): 2 steps of stage 1.
    cfg = load_config(CONFIGS / "spanseqgen1-tiny.json") | {"train_file": str(d / "s1.jsonl"), "out": str(d / "s1"),
                                                            "steps": 2, "save_every": 2}
    assert train_seq2seq.train(cfg, seed=0)["step"] == 2
    return d


def test_tiny_stage2_starts_from_stage1(stage1: Path) -> None:
    d = stage1
    init = d / "s1/seed-0/checkpoint"
    cfg = load_config(CONFIGS / "spanseqgen2-tiny.json")
    assert cfg["init"].startswith("checkpoints/spanseqgen1-tiny/")
    cfg |= {"train_file": str(d / "s2.jsonl"), "init": str(init), "steps": 2, "save_every": 2}
    # lr 0 for one step: the checkpoint written is the init model, not a fresh MiniLM warm start.
    train_seq2seq.train(cfg | {"out": str(d / "lr0"), "lr": 0.0, "steps": 1, "warmup": 0}, seed=0)
    want, got = _state(init), _state(d / "lr0/seed-0/checkpoint")
    assert want.keys() == got.keys()
    assert all(torch.equal(want[k], got[k]) for k in want)

    out = d / "s2"
    first = train_seq2seq.train(cfg | {"out": str(out)}, seed=0)
    assert first["step"] == cfg["steps"] and first["loss"] == first["loss"]  # not NaN
    ckpt = out / "seed-0/checkpoint"
    _, tok = train_seq2seq.load_seq2seq(ckpt)
    assert tok.tokenize(STAGE2[1][2][0] + ANSWER_SEP + "x")[-2] == "<SEP>"
    # Once the run has its own checkpoint it resumes from it; `init` is no longer read.
    again = train_seq2seq.train(cfg | {"out": str(out), "init": str(d / "gone"), "steps": 3}, seed=0)
    assert again["step"] == 3


def test_missing_init_is_an_error(tmp_path: Path) -> None:
    cfg = load_config(CONFIGS / "spanseqgen2-tiny.json") | {"out": str(tmp_path / "o"), "init": str(tmp_path / "none")}
    with (tmp_path / "t.jsonl").open("w") as f:
        f.write(json.dumps({"input": "q [SEP] p", "target": "a"}) + "\n")
    cfg["train_file"] = str(tmp_path / "t.jsonl")
    with pytest.raises(FileNotFoundError, match="init checkpoint"):
        train_seq2seq.train(cfg, seed=0)


def test_freeze_encoder_trains_the_decoder_only(stage1: Path) -> None:
    init = stage1 / "s1/seed-0/checkpoint"
    cfg = load_config(CONFIGS / "spanseqgen2-tiny.json") | {
        "train_file": str(stage1 / "s1.jsonl"), "init": str(init), "out": str(stage1 / "frozen"),
        "steps": 1, "save_every": 1, "warmup": 0, "lr": 1e-3, "freeze_encoder": True}
    train_seq2seq.train(cfg, seed=0)
    before, after = _state(init), _state(stage1 / "frozen/seed-0/checkpoint")
    encoder = [k for k in before if k.startswith("model.encoder.layers.")]
    decoder = [k for k in before if k.startswith("model.decoder.layers.")]
    assert encoder and decoder
    assert all(torch.equal(before[k], after[k]) for k in encoder)
    assert any(not torch.equal(before[k], after[k]) for k in decoder)
