"""Where each module's behaviour is tested: a test file named after the module (`rundir/writer.py` ->
`tests/**/test_writer.py`), or a row of the file map, docs/development/test-map.md, that says which test files
cover it. Why: the tests are organised by behaviour (a resume, a steered run, the window end to end), which
crosses modules, so a newcomer looking for a module's tests needs one of the two; without this check the map
drifts as modules are added, renamed or moved.
"""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAP = REPO / "docs" / "development" / "test-map.md"
ROW = re.compile(r"^\|\s*`([^`]+\.py)`\s*\|(.*?)\|")


def _modules() -> list[str]:
    return sorted(str(p.relative_to(REPO)) for root in ("training_core", "app") for p in (REPO / root).rglob("*.py")
                  if p.name != "__init__.py" and "__pycache__" not in p.parts)


def _test_files() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in (REPO / "tests").rglob("test_*.py"):
        out.setdefault(p.stem[len("test_"):], []).append(str(p.relative_to(REPO)))
    return out


def _rows() -> dict[str, list[str]]:
    rows = {}
    for line in MAP.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m:
            rows[m.group(1)] = re.findall(r"`(tests/[^`]+\.py)`", m.group(2))
    return rows


def test_every_module_has_a_test_file_of_its_name_or_a_row_in_the_map():
    named, rows = _test_files(), _rows()
    missing = [m for m in _modules() if Path(m).stem not in named and m not in rows]
    assert missing == [], f"add a row to {MAP.relative_to(REPO)} (or a test file of its name) for: {missing}"


def test_every_row_of_the_map_names_a_module_and_test_files_that_exist():
    modules = set(_modules())
    for module, tests in _rows().items():
        assert module in modules, f"{MAP.name}: {module} is no module (moved or renamed?)"
        assert tests, f"{MAP.name}: the row of {module} names no test file"
        for t in tests:
            assert (REPO / t).is_file(), f"{MAP.name}: the row of {module} names {t}, which does not exist"
