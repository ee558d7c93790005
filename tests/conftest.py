"""Shared by every test directory: the repository root on sys.path, and a fresh run directory.

Qt settings live in tests/app/conftest.py, so that the core tests never load Qt.
"""
import gc
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # `pytest` run without `python -m` does not add the working directory
    sys.path.insert(0, str(REPO))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run directory that does not exist yet (the trainer must create it)."""
    return tmp_path / "run"


@pytest.fixture(autouse=True, scope="session")
def feature_cache_of_the_session(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Feature spaces trained on real data (training_core/quality/builtin.py) are cached in a directory of the test
    session, the training processes the tests start included, never in the user's cache directory."""
    os.environ["FREEZEFRAME_CACHE_DIR"] = str(tmp_path_factory.mktemp("feature-cache"))


@pytest.fixture(autouse=True, scope="session")
def imports_left_out_of_garbage_collection() -> None:
    """`gc.freeze()` once the test modules (and TensorFlow, Qt) are imported: a full collection walked their
    ~300,000 objects, 0.3 s each time, and the window tests collect after every test (tests/app/conftest.py)."""
    gc.collect()
    gc.freeze()
