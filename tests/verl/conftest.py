"""rlvr inside verl: these tests run in verl's own environment (``.venv-verl``, made by ``make
.venv-verl/.installed``; ``make test`` runs them there). rlvr's main environment cannot hold verl
(verl pins transformers < 5.11), so there they are not collected."""

import importlib.util

if importlib.util.find_spec("verl") is None:
    collect_ignore_glob = ["test_*.py", "scripted.py"]  # scripted.py: the tests' helpers (verl's agent loop)
