"""Co-training end to end at tiny scale (C = 3, N = 1, a 2-layer reader, a few dozen examples):
a run killed with SIGKILL and started again ends with the same silver set, votes and weights as
one never interrupted. Self-contained: its own D_full, D_partial and eval-300 files."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import BertConfig

from ambigqa_train.common import load_config
from ambigqa_train.cotrain import extras, fingerprint, vote
from ambigqa_train.extractive import ExtractiveReader
from ambigqa_train.warm_start import minilm_dir

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
TRAIN = Path(__file__).resolve().parents[1]
PEOPLE = ["Ada Byron", "Alan Turing", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov", "Donald Knuth", "John Backus", "Frances Allen"]
THINGS = ["the compiler", "the sorting machine", "the first debugger", "the stack", "the garbage collector", "the linker"]
EVAL_QUESTION = "who built the stack"

missing = None if (minilm_dir() / "tokenizer.json").exists() else f"{minilm_dir()}/tokenizer.json (scripts/assets)"


def passage(i: int, a: str, b: str) -> str:
    return f"History {i}: {THINGS[i % len(THINGS)].capitalize()} was built by {a} in {1950 + i}, and later {b} rebuilt it."


def write_fixture(d: Path) -> dict[str, Any]:
    (d / "data/splits").mkdir(parents=True)
    (d / "data/ambignq").mkdir()
    (d / "data/splits/eval-300.txt").write_text("e0\n")
    (d / "data/ambignq/dev_light.json").write_text(json.dumps([{"id": "e0", "question": EVAL_QUESTION, "annotations": [{"type": "singleAnswer", "answer": ["Ada Byron"]}]}]))
    with (d / "full.jsonl").open("w") as f:
        for i in range(12):
            a, b = PEOPLE[i % 8], PEOPLE[(i + 3) % 8]
            q = f"who built {THINGS[i % len(THINGS)]} number {i}"
            f.write(json.dumps({"id": f"full:{i}", "source": "fixture", "question": q, "input": f"{q} [SEP] {passage(i, a, b)} [SEP] {passage(i + 1, b, a)}",
                                "titles": [f"History {i}", f"History {i + 1}"], "answers": [[a], [b]]}) + "\n")
    with (d / "groups.jsonl").open("w") as f:
        for i in range(30):
            a, b = PEOPLE[(i + 1) % 8], PEOPLE[(i + 5) % 8]
            t, x = passage(i, a, b).split(": ", 1)
            negs = [dict(zip(("title", "text"), passage(i + j, PEOPLE[j], PEOPLE[j + 1]).split(": ", 1))) for j in (2, 4)]
            q = EVAL_QUESTION if i == 0 else f"who built {THINGS[i % len(THINGS)]} in {1950 + i}"
            f.write(json.dumps({"id": f"nq-gold:{i}", "source": "nq-gold", "question": q, "answers": [a], "positive": {"title": t, "text": x}, "negatives": negs}) + "\n")
    torch.manual_seed(0)
    from ambigqa_train.warm_start import load_cross_encoder_tokenizer

    tok = load_cross_encoder_tokenizer()
    model = ExtractiveReader(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=128))
    model.save_pretrained(str(d / "init"))
    tok.save_pretrained(str(d / "init"))
    return load_config(CONFIGS / "cotrain-tiny.json") | {
        "init": str(d / "init"), "data": str(d / "data"), "full_file": str(d / "full.jsonl"), "partial_file": str(d / "groups.jsonl"),
        # A threshold low enough that a tiny reader's answer sets hold several answers, so votes happen.
        "vote_keep": 0.05,
    }


def start(cfg: dict[str, Any], out: Path) -> subprocess.Popen[str]:
    path = out.with_suffix(".json")
    path.write_text(json.dumps(cfg | {"out": str(out)}))
    env = {**os.environ, "PYTHONPATH": str(TRAIN), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "ambigqa_train.cotrain", "run", "--config", str(path)], stdout=subprocess.PIPE, text=True, env=env)


def finish(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def kill_after(cfg: dict[str, Any], out: Path, when: Any) -> None:
    """Starts a run and SIGKILLs it at the first progress line for which `when` is true."""
    proc = start(cfg, out)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("{") and when(json.loads(line)):
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run ended before the kill point"


@pytest.mark.prerequisite(missing)
def test_cotrain_kill_and_resume_ends_identical(tmp_path: Path) -> None:
    cfg = write_fixture(tmp_path)
    lines = finish(start(cfg, tmp_path / "whole"))
    summary = lines[-1]["summary"]
    silver = [json.loads(x) for x in (tmp_path / "whole/silver-1.jsonl").read_text().splitlines()]
    # Every partial example was voted on (N = 1), with its votes, and eval-300's question never entered.
    assert len(silver) == 24 and all(r["id"] != "nq-gold:0" for r in silver)
    assert sum(summary["silver"][0][d] for d in ("multi", "single", "wait")) == 24
    assert all(len(r["members"]) == 3 for r in silver)
    assert any(r["votes"] for r in silver), "no member predicted an extra answer: the fixture tests no vote"
    assert any(line.get("eta_s") is not None for line in lines) and any("examples_per_s" in line for line in lines)
    # The co-trained committee trained on D_full plus the silver set.
    decided = sum(r["decision"] != "wait" for r in silver)
    assert json.loads((tmp_path / "whole/committee-2/member-0/done.json").read_text())["rows"] == 12 + decided

    # Killed in the middle of a member's training, then while voting, each time started again.
    broken = tmp_path / "broken"
    kill_after(cfg, broken, lambda e: e.get("step") == 2 and e.get("of") == 4)
    kill_after(cfg, broken, lambda e: e.get("stage") == "predict" and e.get("member") == "1.1")
    finish(start(cfg, broken))
    assert fingerprint(broken) == fingerprint(tmp_path / "whole")


def test_vote_rules() -> None:
    """More than C/2 for an extra answer: multi; nobody beyond the known answer: single; else wait."""
    waiting = [{"id": i, "question": "q", "answers": [["Paris"]]} for i in ("a", "b", "c")]
    member = lambda a, b, c: {"a": {"extra": a}, "b": {"extra": b}, "c": {"extra": c}}  # noqa: E731
    votes = [member(["Lyon"], [], ["Nice"]), member(["the Lyon"], None, []), member([], [], ["Lille"])]
    rows = {r["id"]: r for r in vote(waiting, votes, 3)}
    assert rows["a"]["decision"] == "multi" and rows["a"]["answers"] == [["Paris"], ["Lyon"]] and rows["a"]["votes"] == {"lyon": 2}
    assert rows["b"]["decision"] == "single" and rows["b"]["members"][1] is None
    assert rows["c"]["decision"] == "wait" and rows["c"]["answers"] is None


def test_extras_abstain_without_the_known_answer() -> None:
    assert extras([("Paris, France", 0.5), ("Lyon", 0.2)], ["Paris"]) == ["Lyon"]
    assert extras([("Lyon", 0.5)], ["Paris"]) is None
