"""The fault injections' dice: a function of the seed and the row alone, and stable across releases
(the benchmarks' figures are reproduced from them)."""

from __future__ import annotations

import subprocess
import sys

from rlvr.seeded import uniforms


def test_draws_are_pinned_so_a_benchmarks_faults_land_on_the_same_rows_in_every_release() -> None:
    assert uniforms(0, "gold", "text") == (0.841858176124254,)
    assert uniforms(3, [1, 2], [5, 6], n=2) == (0.27508790911075065, 0.18146855660118458)


def test_draws_differ_by_seed_and_by_row_and_do_not_depend_on_the_process() -> None:
    us = [uniforms(s, "g", t)[0] for s in range(20) for t in ("a", "b")]
    assert len(set(us)) == len(us) and all(0 <= u < 1 for u in us)
    other = subprocess.run(
        [sys.executable, "-c", "from rlvr.seeded import uniforms; print(uniforms(5, 'g', 'a'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert other == str(uniforms(5, "g", "a"))  # not Python's per-process salted hash
