"""Bad input of every kind, given to ``rlvr train`` as a user would: one clear line (``error: ...``
naming the field, file and line, or folder), exit code 2, no traceback, nothing written.

Families: the config schema walked field by field (Hypothesis draws the field and what is wrong
with it: a wrong type, a value out of range or not among the choices, a misspelt or unknown key),
contradictory settings, training files broken line by line (Hypothesis corrupts a valid file),
model folders that are not models, and run folders from another version given to ``--resume``.
"""

from __future__ import annotations

import json
import os
import random
import typing
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from typer.testing import CliRunner

from rlvr.cli.app import app
from rlvr.config import TrainConfig, load_config
from rlvr.errors import ConfigError

runner = CliRunner()
#: Every input refused in this session (``RLVR_BAD_INPUT_LOG``: a file each is appended to, for the count).
_LOG = os.environ.get("RLVR_BAD_INPUT_LOG")


def _refused(args: list[str], out: Path, *names: str) -> str:
    """Run ``rlvr train args``; assert the contract; returns the error line."""
    r = runner.invoke(app, ["train", *args, "--set", f"run.out_dir={out}"])
    _count(args, r.output)
    text = r.output
    assert r.exit_code == 2, f"{args}: exit {r.exit_code}\n{text[-2000:]}"
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in text, text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), f"{args}: {lines}"
    for name in names:
        assert name in lines[0], f"{args}: {name!r} not named in {lines[0]!r}"
    assert not out.exists(), f"{args}: {out} was written"
    return lines[0]


def _count(args: list[str], output: str) -> None:
    if _LOG:
        with open(_LOG, "a") as f:
            f.write(json.dumps({"args": args, "traceback": "Traceback" in output}) + "\n")


# ----------------------------------------------------------------------------- the config schema
def _leaves(model: type[BaseModel], prefix: str = "") -> list[tuple[str, Any, Any]]:
    """``(dotted path, annotation, field info)`` for every field under ``model``."""
    out = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        ann = field.annotation
        subs = [a for a in (ann, *typing.get_args(ann)) if isinstance(a, type) and issubclass(a, BaseModel)]
        if subs:
            out += _leaves(subs[0], path + ".")
        else:
            out.append((path, ann, field))
    return out


# run.out_dir is every case's own (the harness sets it last, so a bad one would be overridden)
LEAVES = [leaf for leaf in _leaves(TrainConfig) if leaf[0] != "run.out_dir"]
SECTIONS = sorted({p.split(".")[0] for p, _, _ in LEAVES if "." in p})


def _bad_values(ann: Any, field: Any) -> list[Any]:
    """Values ``ann`` does not take: a wrong type, a value out of its range or its choices."""
    args = typing.get_args(ann)
    kinds = {a for a in (ann, *args) if a is not type(None)}
    out: list[Any] = []
    if typing.get_origin(ann) is Literal or any(typing.get_origin(a) is Literal for a in kinds):
        out.append("no-such-choice")
    for meta in field.metadata:
        for attr, step in (("ge", -1), ("gt", 0), ("le", 1), ("lt", 0)):
            bound = getattr(meta, attr, None)
            if isinstance(bound, int | float) and not isinstance(bound, bool):
                out.append(bound + step if attr in ("ge", "le") else bound)
    plain = {typing.get_origin(a) or a for a in kinds}
    if plain & {int, float}:
        out += ["abc", [1, 2]]
    if int in plain and float not in plain:
        out.append(1.5)
    if bool in plain:
        out.append("maybe")
    if str in plain:
        out += [[1, 2], {"a": 1}]
    if plain & {list, tuple}:
        out += ["not-a-list", 7]
    if dict in plain:
        out += [[1], "not-a-mapping"]
    return out


CASES = [(path, v) for path, ann, field in LEAVES for v in _bad_values(ann, field)]


def _misspelt(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word))
    return word[:i] + word[i + 1 :] if len(word) > 3 else word + "x"


@settings(max_examples=130, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(case=st.sampled_from(CASES) | st.tuples(st.sampled_from(LEAVES), st.integers(0, 10**6)))
def test_the_config_schema_refuses_what_it_does_not_take(case: Any, tmp_path_factory: Any) -> None:
    out = tmp_path_factory.mktemp("cfg") / "run"
    if isinstance(case[0], str):  # a value of the wrong kind
        path, value = case
        override = f"{path}={json.dumps(value)}"
        named = path
    else:  # a misspelt key, in its section
        (path, _, _), seed = case
        parts = path.split(".")
        parts[-1] = _misspelt(parts[-1], random.Random(seed))
        assume(parts[-1] not in {p.split(".")[-1] for p, _, _ in LEAVES})
        override = f"{'.'.join(parts)}=1"
        named = ".".join(parts)
    try:
        load_config(None, [override])
    except ConfigError:
        pass
    else:  # the generator's mistake, not the schema's: the value was fine
        assume(False)
    line = _refused(["--set", override], out, named)
    if not isinstance(case[0], str):
        assert "unknown field" in line and ("did you mean" in line or "has:" in line), line


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (["model.dtype=bfloat16"], "model"),
        (["engine=trl", "judge={}"], "judge"),
        (["data.task=null"], "data"),
        (["engine=trl", "trl.use_vllm=true", "decoding.constrain=answer"], "decoding.constrain"),
        (["engine=trl", "off_policy.lag=2"], "off_policy.lag"),
        (["nosuchsection.x=1"], "nosuchsection"),
        (["optim.lr"], "optim.lr"),
        (["=1"], "="),
        (["optim.lr=[1"], "optim.lr"),
        (["optim.lr.x=1"], "optim.lr"),
        (["model..name=x"], "model..name"),
    ],
)
def test_contradictory_and_malformed_settings(overrides: list[str], named: str, tmp_path: Path) -> None:
    _refused([a for o in overrides for a in ("--set", o)], tmp_path / "run", named)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("optim:\n  lr: [1\n", ":3:1"),
        ("- a\n- b\n", "mapping"),
        ("optim: {lr: 1e-3\n", "not valid YAML"),
        ("\xff\xfe", "UTF-8"),
        ("optim:\n  lrr: 1\n", "did you mean 'lr'"),
        ("model: 3\n", "model"),
    ],
)
def test_config_files_that_do_not_load(text: str, named: str, tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_bytes(text.encode("latin-1"))
    _refused([str(f)], tmp_path / "run", named)


def test_a_config_that_is_a_folder_or_missing(tmp_path: Path) -> None:
    _refused([str(tmp_path)], tmp_path / "run", "folder")
    _refused([str(tmp_path / "nope.yaml")], tmp_path / "run", "nope.yaml")


# ----------------------------------------------------------------------------- training files
GOOD = [{"question": f"{i}+{i}", "answer": str(2 * i)} for i in range(12)]
DAMAGE = [
    "cut",
    "bad-utf8",
    "no-gold",
    "empty-prompt",
    "null-gold",
    "list-row",
    "number-prompt",
    "not-json",
    "blank-key",
]


def _damaged(kind: str, line: int) -> bytes:
    rows = [json.dumps(r).encode() for r in GOOD]
    row = dict(GOOD[line])
    if kind == "cut":
        rows[line] = rows[line][: len(rows[line]) // 2]
    elif kind == "bad-utf8":
        rows[line] = rows[line].replace(b'"}', b'\xff"}')
    elif kind == "no-gold":
        rows[line] = json.dumps({"question": row["question"]}).encode()
    elif kind == "empty-prompt":
        rows[line] = json.dumps({**row, "question": "  "}).encode()
    elif kind == "null-gold":
        rows[line] = json.dumps({**row, "answer": None}).encode()
    elif kind == "list-row":
        rows[line] = b"[1, 2]"
    elif kind == "number-prompt":
        rows[line] = json.dumps({**row, "question": 42}).encode()
    elif kind == "not-json":
        rows[line] = b"question: 1+1"
    elif kind == "blank-key":
        rows[line] = json.dumps({"": 1, "answer": "2"}).encode()
    return b"\n".join(rows) + b"\n"


@settings(max_examples=45, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(kind=st.sampled_from(DAMAGE), line=st.integers(0, len(GOOD) - 2))
def test_a_training_file_broken_anywhere_is_refused_naming_its_line(
    kind: str, line: int, tmp_path_factory: Any
) -> None:
    d = tmp_path_factory.mktemp("data")
    f = d / "train.jsonl"
    f.write_bytes(_damaged(kind, line))
    # the first line decides the layout: a first line without a gold is an unknown layout, also named
    _refused(["--set", f"data.path={f}", "--set", "data.eval_size=2"], d / "run", f"train.jsonl:{line + 1}")


@pytest.mark.parametrize("layout", ["dataset_dict", "parquet-folder"])
def test_a_dataset_folder_without_the_split(layout: str, tmp_path: Path) -> None:
    import datasets

    ds = datasets.Dataset.from_list(GOOD)
    folder = tmp_path / "ds"
    if layout == "dataset_dict":
        datasets.DatasetDict({"test": ds}).save_to_disk(str(folder))
    else:
        folder.mkdir()
        ds.to_json(str(folder / "test.jsonl"))
    _refused(["--set", f"data.path={folder}"], tmp_path / "run", "no split 'train'", "test")


def test_empty_and_missing_data(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    _refused(["--set", f"data.path={tmp_path / 'empty.jsonl'}"], tmp_path / "run", "empty.jsonl")
    _refused(["--set", f"data.path={tmp_path / 'gone.jsonl'}"], tmp_path / "run", "gone.jsonl")
    (tmp_path / "few.jsonl").write_text(json.dumps(GOOD[0]) + "\n")
    _refused(["--set", f"data.path={tmp_path / 'few.jsonl'}"], tmp_path / "run", "no training rows left")
    (tmp_path / "nodata").mkdir()
    _refused(["--set", f"data.path={tmp_path / 'nodata'}"], tmp_path / "run", "nodata")


def test_a_prompt_longer_than_the_context_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    rows = [*GOOD, {"question": "what is " + "1+" * 600 + "1", "answer": "601"}]
    f = tmp_path / "long.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    line = _refused(["--set", f"data.path={f}", "--set", "data.eval_size=2"], tmp_path / "run", "context of 1024")
    assert "max_new_tokens" in line


# ----------------------------------------------------------------------------- models and runs
@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: Any) -> Path:
    from rlvr.models.tiny import build_model, build_tokenizer

    folder = tmp_path_factory.mktemp("tiny") / "model"
    tok = build_tokenizer()
    build_model(tok).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _broken_model(kind: str, good: Path, where: Path) -> Path:
    import shutil

    folder = where / kind
    shutil.copytree(good, folder)
    if kind == "no-config":
        (folder / "config.json").unlink()
    elif kind == "config-not-json":
        (folder / "config.json").write_text("{not json")
    elif kind == "config-no-type":
        (folder / "config.json").write_text('{"hidden_size": 8}')
    elif kind == "no-weights":
        for w in folder.glob("*.safetensors"):
            w.unlink()
    elif kind == "no-tokenizer":
        for t in folder.glob("tokenizer*"):
            t.unlink()
    elif kind == "weights-garbage":
        for w in folder.glob("*.safetensors"):
            w.write_bytes(b"\0" * 64)
    elif kind == "tokenizer-garbage":
        (folder / "tokenizer.json").write_text("{}")
    elif kind == "no-pad-no-eos":
        cfg_file = folder / "tokenizer_config.json"
        cfg = json.loads(cfg_file.read_text())
        for k in ("pad_token", "eos_token"):
            cfg[k] = None
        cfg_file.write_text(json.dumps(cfg))
        special = folder / "special_tokens_map.json"
        if special.exists():
            special.unlink()
    elif kind == "a-file":
        shutil.rmtree(folder)
        folder.write_text("not a folder")
    return folder


@pytest.mark.parametrize(
    "kind",
    [
        "no-config",
        "config-not-json",
        "config-no-type",
        "no-weights",
        "no-tokenizer",
        "weights-garbage",
        "tokenizer-garbage",
        "no-pad-no-eos",
        "a-file",
    ],
)
def test_a_model_folder_that_is_not_a_model(kind: str, tiny_folder: Path, tmp_path: Path) -> None:
    folder = _broken_model(kind, tiny_folder, tmp_path)
    _refused(["--set", f"model.name={folder}"], tmp_path / "run", f"model.name '{folder}'")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: Any) -> Path:
    run = tmp_path_factory.mktemp("done") / "run"
    r = runner.invoke(
        app, ["train", "--set", "run.steps=1", "--set", "run.eval_every=0", "--set", f"run.out_dir={run}"]
    )
    assert r.exit_code == 0, r.output
    return run


def _old_run(kind: str, good: Path, where: Path) -> Path:
    import shutil

    import torch

    run = where / kind
    shutil.copytree(good, run)
    state_file = next((run / "checkpoints").glob("step-*/state.pt"))
    if kind == "config-field-gone":
        (run / "config.yaml").write_text((run / "config.yaml").read_text() + "colour: red\n")
    elif kind == "config-not-yaml":
        (run / "config.yaml").write_text("model: [\n")
    elif kind == "state-garbage":
        state_file.write_bytes(b"junk")
    elif kind == "state-key-gone":
        state = torch.load(state_file, weights_only=False)
        del state["optimizer"]
        torch.save(state, state_file)
    elif kind == "state-not-a-dict":
        torch.save([1, 2, 3], state_file)
    elif kind == "another-model":
        state = torch.load(state_file, weights_only=False)
        state["model"] = {k: v[..., :1] for k, v in state["model"].items()}
        torch.save(state, state_file)
    elif kind == "no-checkpoint":
        shutil.rmtree(run / "checkpoints")
    return run


@pytest.mark.parametrize(
    "kind",
    [
        "config-field-gone",
        "config-not-yaml",
        "state-garbage",
        "state-key-gone",
        "state-not-a-dict",
        "another-model",
        "no-checkpoint",
    ],
)
def test_a_run_folder_from_another_version_is_refused_and_left_as_it_was(
    kind: str, finished_run: Path, tmp_path: Path
) -> None:
    run = _old_run(kind, finished_run, tmp_path)
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    r = runner.invoke(app, ["train", "--resume", str(run), "--set", "run.steps=3"])
    _count(["--resume", kind], r.output)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output[-2000:]
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(run) in lines[0], lines
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before  # nothing written
