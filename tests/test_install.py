"""`pip install .` as a user runs it, without the network: the installed copy holds every module of app/ and
training_core/ (a subpackage the package discovery missed fails here, not on a user's machine), the built-in
examples and their data, requirements.txt's pins, and a `freezeframe` command that runs what `python main.py`
runs, from the installed files alone (outside the repository, which is not on its path)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.metadata import Distribution
from pathlib import Path

import pytest

from tests import zygote

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("app", "training_core")
RESOURCES = ("experiments", "data")  # resources/docs (README pictures, their scripts) is not installed
BUILD_INPUTS = ("pyproject.toml", "README.md", "requirements.txt", *PACKAGES, "resources")


def files_under(root: Path, sub: str, pattern: str = "*") -> set[str]:
    """Paths (relative to `root`) of the files under root/sub, Python's byte-code caches left out."""
    return {p.relative_to(root).as_posix() for p in (root / sub).rglob(pattern)
            if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip install --target` of a copy of the build's inputs: a build without isolation writes build/ and
    *.egg-info beside its sources, which must not land in the repository (nor race another run's). No index
    and no isolation: pip fetches nothing, and builds with the setuptools requirements-dev.txt pins."""
    base = tmp_path_factory.mktemp("install")
    src = base / "src"
    src.mkdir()
    for name in BUILD_INPUTS:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(REPO / name, src / name)
    out = base / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                        "--no-compile", "--disable-pip-version-check", "--target", str(out), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def shell_env() -> dict[str, str]:
    """A user's shell: no PYTHONPATH, no TensorFlow log level (the entry point sets it), and a terminal width,
    so that --help wraps the same way in every run compared."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TF_CPP_MIN_LOG_LEVEL")}
    return {**env, "QT_QPA_PLATFORM": "offscreen", "COLUMNS": "200"}


def installed_env(target: Path) -> dict[str, str]:
    """`shell_env` with the installed copy, and only it, on Python's path."""
    return {**shell_env(), "PYTHONPATH": str(target)}


def run_installed(target: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """The `freezeframe` script pip wrote, as the shell would run it, in a directory outside the repository."""
    return subprocess.run([sys.executable, str(target / "bin" / "freezeframe"), *args], cwd=cwd,
                          env=installed_env(target), capture_output=True, text=True, timeout=300)


def test_every_module_and_resource_file_is_installed(target):
    for package in PACKAGES:  # the same tree of modules as the source: none left out, none from elsewhere
        assert files_under(target, package, "*.py") == files_under(REPO, package, "*.py"), package
    wanted = {"resources/__init__.py"} | {f for sub in RESOURCES for f in files_under(REPO, f"resources/{sub}")}
    assert files_under(target, "resources") == wanted
    for f in wanted:
        assert (target / f).read_bytes() == (REPO / f).read_bytes(), f


def test_the_metadata_declares_the_command_and_the_pins_of_requirements_txt(target):
    (info,) = target.glob("freezeframe-*.dist-info")
    dist = Distribution.at(info)
    (script,) = [e for e in dist.entry_points if e.group == "console_scripts"]
    assert (script.name, script.value) == ("freezeframe", "app.entry:main")
    pins = [ln.split("#")[0].strip() for ln in (REPO / "requirements.txt").read_text().splitlines()]
    assert sorted(dist.requires or []) == sorted(p for p in pins if p)
    assert dist.metadata["Requires-Python"] == ">=3.11"


def test_the_installed_entry_sets_tensorflows_log_level_before_tensorflow_loads(target, tmp_path):
    probe = ("import os, sys, app.entry, training_core.experiment.loading as loading; "
             "print(app.entry.__file__, loading.EXAMPLES_DIR, os.environ.get('TF_CPP_MIN_LOG_LEVEL'), "
             "'tensorflow' in sys.modules, 'PySide6' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=installed_env(target), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    entry, examples, level, tf, qt = r.stdout.split()
    assert Path(entry).is_relative_to(target) and Path(examples) == target / "resources" / "experiments"
    assert (level, tf, qt) == ("2", "False", "False")  # set on import; neither library loaded yet


def test_freezeframe_help_is_main_pys_and_names_the_installed_examples(target, tmp_path):
    r = run_installed(target, tmp_path, "--help")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    repo = subprocess.run([sys.executable, "main.py", "--help"], cwd=REPO, env=shell_env(),
                          capture_output=True, text=True, timeout=120)
    assert repo.returncode == 0 and r.stdout == repo.stdout
    examples = sorted(Path(f).stem for f in files_under(REPO, "resources/experiments", "*.py"))
    assert f"built-in example to open: {', '.join(examples)} " in r.stdout  # read from the installed copy


def test_freezeframe_lists_the_ring_examples_scopes_as_main_py_does(target, tmp_path):
    r = run_installed(target, tmp_path, "--headless", "--example", "ring", "--list-scopes")
    assert r.returncode == 0, r.stderr
    repo = zygote.run([sys.executable, "main.py", "--headless", "--example", "ring", "--list-scopes"], cwd=REPO,
                      env=shell_env(), capture_output=True, text=True, timeout=300)
    assert repo.returncode == 0, repo.stderr
    assert r.stdout == repo.stdout and "Phases:" in r.stdout  # the same models, built from the installed file
