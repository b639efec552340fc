"""Which TRL checkpoint ``rlvr train --resume`` continues from: the newest one whose saving finished."""

from __future__ import annotations

from pathlib import Path

from rlvr.integrations.trl.runfolder import STATE_FILE, last_complete_checkpoint


def _checkpoint(out: Path, step: int, *, finished: bool) -> Path:
    folder = out / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_text("weights")
    if finished:  # TRL's state, then rlvr's, written last
        (folder / "trainer_state.json").write_text("{}")
        (folder / STATE_FILE).write_text("{}")
    return folder


def test_a_checkpoint_cut_off_while_saving_is_passed_over(tmp_path: Path) -> None:
    _checkpoint(tmp_path, 1, finished=True)
    two = _checkpoint(tmp_path, 10, finished=True)
    cut = _checkpoint(tmp_path, 11, finished=False)  # killed while writing it
    (tmp_path / "checkpoint-12").mkdir()  # killed before anything was written
    (tmp_path / "metrics.jsonl").write_text("")
    found, passed = last_complete_checkpoint(tmp_path)
    assert found == two and passed == [tmp_path / "checkpoint-12", cut]  # by step, not by name


def test_no_finished_checkpoint_is_none(tmp_path: Path) -> None:
    _checkpoint(tmp_path, 3, finished=False)
    assert last_complete_checkpoint(tmp_path) == (None, [tmp_path / "checkpoint-3"])
