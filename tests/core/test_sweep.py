"""A sweep (training_core/cli/sweep.py, training_core/runs/sweep.py): a 2 x 2 x 2-seed grid on the ring example
(ratio x "freeze the discriminator from step N" x seed) started from the command line, killed with SIGKILL while a
point trains, and continued with `--resume SWEEP_DIR`: the finished points are skipped, the cut one resumes from
its checkpoint (not begun again), the rest run; every point trained its grid point; `--point K` and
`--print-commands` are ordinary commands; and the device pool runs two points side by side (two CPU slots stand in
for two GPUs: this machine has none)."""
from __future__ import annotations

import signal

import numpy as np
import pytest

from training_core import read_config, read_events, read_scalars
from training_core.base import events as E
from training_core.cli.sweep_pool import Slot, run_pool
from training_core.cli.sweep_report import say
from training_core.rundir.layout import checkpoint_steps
from training_core.runs.sweep import Sweep, write_sweep
from training_core.runs.sweep_spec import spec_from_dict

from .helpers import main_cmd, run_all, start, wait_for

STEPS, FROM = 200, 60
FROZEN = "discriminator/dense_1"  # (the whole discriminator frozen: its phase would be skipped)
GRID = ["--grid", "ratio=1:1,2:1", "--grid", f"freeze=none,{FROZEN}@{FROM}", "--grid", "seed=0,1"]
ARGS = ["--headless", "--sweep", "--example", "ring", "--steps", str(STEPS), "--checkpoint-every", "25",
        "--no-tensorboard", *GRID, "--quiet"]
TIMEOUT = 600


def _cut_mid_way(d) -> int | None:
    """The point being trained with two checkpoints behind it and its end not yet recorded, if there is one."""
    runs = d / "runs"
    for run in sorted(runs.iterdir()) if runs.is_dir() else []:
        index = int(run.name.split("-")[0])
        if index >= 2 and len(checkpoint_steps(run)) >= 2 and not any(
                isinstance(e, E.Stop) for e in read_events(run)):
            return index
    return None


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """The sweep, killed (SIGKILL: the process that trains the points one after another) while its third point
    or a later one trains, then continued with --resume, and its table exported as CSV and LaTeX."""
    tmp = tmp_path_factory.mktemp("sweep")
    d = tmp / "ablation"
    victim = start(main_cmd(*ARGS, "--sweep-dir", str(d)))
    try:
        assert wait_for(lambda: _cut_mid_way(d) is not None or victim.poll() is not None, timeout=TIMEOUT)
        killed = _cut_mid_way(d)
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.communicate(timeout=60)
    assert victim.returncode == -signal.SIGKILL and killed is not None, "the sweep ended before it could be killed"
    after_kill = [s.state for s in Sweep.open(d).states()]
    cut_at = checkpoint_steps(d / "runs" / Sweep.open(d).points[killed].name)[-1]
    resumed = run_all({"resume": main_cmd("--headless", "--resume", str(d), "--quiet")}, timeout=TIMEOUT)["resume"]
    assert resumed.returncode == 0, resumed.stderr
    later = run_all({
        "csv": main_cmd("--export", str(d), "--table", str(tmp / "table.csv")),
        "tex": main_cmd("--export", str(d), "--table", str(tmp / "table.tex"), "--step", str(FROM)),
        "point": main_cmd("--headless", "--sweep", str(d), "--point", "0", "--quiet"),
        "bands": main_cmd("--export", str(d), "--bands", "minmax", "--plots", "losses", "--csv",
                          str(tmp / "bands.csv"), "--out", str(tmp / "bands.svg")),
    }, timeout=TIMEOUT)
    return d, killed, cut_at, after_kill, resumed, later, tmp


def test_killed_the_finished_points_stay_done_and_the_one_cut_mid_way_is_partial(sweep):
    d, killed, cut_at, after_kill, *_ = sweep
    assert after_kill[:killed] == ["done"] * killed
    assert after_kill[killed] == "partial" and cut_at >= 25
    assert set(after_kill[killed + 1:]) <= {"new"}


def test_resumed_the_done_points_are_skipped_the_cut_one_continues_from_its_checkpoint_and_all_finish(sweep):
    d, killed, cut_at, _, resumed, *_ = sweep
    s = Sweep.open(d)
    assert [st.state for st in s.states()] == ["done"] * 8
    said = {p.index: next(ln for ln in resumed.stdout.splitlines() if f"] {p.name}: " in ln) for p in s.points}
    assert all(said[i].endswith("done already; skipped") for i in range(killed))
    assert said[killed].endswith(f"resumed from step {cut_at}")
    assert all(said[i].endswith("started") for i in range(killed + 1, 8))
    run = s.run_dir(s.points[killed])
    events = read_events(run)
    assert sum(isinstance(e, E.Start) for e in events) == 1  # not begun again
    resumes = [e for e in events if isinstance(e, E.Resumed)]
    assert [r.checkpoint for r in resumes] == [f"checkpoints/ckpt-{cut_at}"]
    steps = np.sort(np.concatenate([s_.steps for t, s_ in read_scalars(run).items() if t.startswith("loss/")]))
    assert np.array_equal(steps, np.arange(1, STEPS + 1))  # one timeline: every step once


def test_every_point_trained_its_grid_point(sweep):
    d = sweep[0]
    s = Sweep.open(d)
    for p in s.points:
        run = s.run_dir(p)
        cfg = read_config(run)
        assert cfg["seed"] == p.values["seed"] and cfg["steps"] == STEPS
        assert cfg["schedule"]["ratio"] == [int(c) for c in p.values["ratio"].split(":")]
        freezes = [(e.step, e.scopes, e.id) for e in read_events(run) if isinstance(e, E.Freeze)]
        d_norms = {t: v for t, v in read_scalars(run).items() if t.startswith("update_norm/discriminator/")}
        assert len(d_norms) == 6
        if p.values["freeze"] == "none":
            assert cfg["freeze"] == [] and freezes == []
            continue
        # frozen from step FROM on: the freeze applied at that step, and every later update of it exactly 0
        assert freezes == [(FROM, [FROZEN], "planned-0")] and cfg["planned"][0]["step"] == FROM
        for tag, series in d_norms.items():
            after = series.values[series.steps > FROM]
            assert len(after) and np.all(series.values[series.steps <= FROM] > 0), tag
            assert np.all(after == 0.0) if tag.startswith(f"update_norm/{FROZEN}/") else np.all(after > 0), tag


def _group_key(run) -> tuple:
    """A run's setting read from its own config.toml, not from the sweep: its ratio and what it froze when."""
    cfg = read_config(run)
    planned = cfg.get("planned", [])
    freeze = f"{'+'.join(planned[0]['scopes'])}@{planned[0]['step']}" if planned else "+".join(cfg["freeze"]) or "none"
    return ":".join(map(str, cfg["schedule"]["ratio"])), freeze


def _expected(d, step: int | None = None) -> dict[tuple, dict[str, tuple[float, float, int]]]:
    """Per setting and tag, mean and sd (ddof=1) over the seeds of each run's last value (at or before `step`)."""
    values: dict[tuple, dict[str, list[float]]] = {}
    for run in sorted((d / "runs").iterdir()):
        for tag, series in read_scalars(run).items():
            if tag.startswith(("loss/", "metric/")):
                keep = series.steps <= step if step is not None else np.ones(len(series.steps), bool)
                values.setdefault(_group_key(run), {}).setdefault(tag, []).append(float(series.values[keep][-1]))
    return {k: {t: (float(np.mean(v)), float(np.std(v, ddof=1)), len(v)) for t, v in tags.items()}
            for k, tags in values.items()}


def test_the_csv_table_equals_the_numbers_of_the_run_directories(sweep):
    import csv
    d, *_, later, tmp = sweep
    assert later["csv"].returncode == 0, later["csv"].stderr
    rows = list(csv.DictReader((tmp / "table.csv").read_text().splitlines()))
    expected = _expected(d)
    assert len(rows) == len(expected) == 4
    assert list(rows[0])[:3] == ["ratio", "freeze", "seeds"]
    for row in rows:
        want = expected[(row["ratio"], row["freeze"])]
        assert row["seeds"] == "2"
        assert {"loss/D", "loss/G", "metric/modes_covered", "metric/high_quality"} <= set(want)
        for tag, (mean, sd, n) in want.items():
            assert (float(row[f"{tag} mean"]), float(row[f"{tag} sd"]), int(row[f"{tag} n"])) == (mean, sd, n), tag


def test_the_latex_table_is_booktabs_with_mean_pm_sd_at_the_end_and_at_the_step(sweep):
    from training_core.runs.sweep_table import mean_sd_text
    d, *_, later, tmp = sweep
    assert later["tex"].returncode == 0, later["tex"].stderr
    text = (tmp / "table.tex").read_text()
    lines = text.splitlines()
    assert lines[1].startswith("\\begin{tabular}{ll") and lines[-1] == "\\end{tabular}"
    assert [ln for ln in lines if ln in ("\\toprule", "\\midrule", "\\bottomrule")] == \
        ["\\toprule", "\\midrule", "\\bottomrule"]
    head = lines[lines.index("\\toprule") + 1]
    assert head.startswith("ratio & freeze & D loss & G loss & ") and f"D loss @ {FROM}" in head  # readable titles
    body = lines[lines.index("\\midrule") + 1:lines.index("\\bottomrule")]
    assert len(body) == 4
    end, at = _expected(d), _expected(d, FROM)
    row = next(r for r in body if r.startswith(f"2:1 & {FROZEN.replace('_', chr(92) + '_')}@{FROM} & "))
    cells = row.removesuffix(" \\\\").split(" & ")
    mean, sd, _ = end[("2:1", f"{FROZEN}@{FROM}")]["loss/D"]
    assert cells[2] == f"${mean_sd_text(mean, sd)}$"  # mean and sd to one decimal place, from the run dirs' numbers
    mean_at, sd_at, _ = at[("2:1", f"{FROZEN}@{FROM}")]["loss/G"]
    headers = head.removesuffix(" \\\\").split(" & ")
    assert cells[headers.index(f"G loss @ {FROM}")] == f"${mean_sd_text(mean_at, sd_at)}$"


def test_a_point_alone_is_an_ordinary_command_that_skips_a_done_point(sweep):
    point = sweep[5]["point"]
    assert point.returncode == 0, point.stderr
    assert point.stdout.strip().endswith("done already; skipped")


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    d = tmp_path_factory.mktemp("pool") / "two"
    r = run_all({"print": main_cmd("--headless", "--sweep", "--example", "ring", "--steps", "30", "--no-tensorboard",
                                   "--grid", "seed=0,1", "--sweep-dir", str(d), "--print-commands")})["print"]
    return d, r


def test_print_commands_writes_the_sweep_and_prints_one_command_per_point(printed):
    d, r = printed
    assert r.returncode == 0, r.stderr
    commands = [ln for ln in r.stdout.splitlines() if not ln.startswith("#")]
    assert commands == [f"python {main_cmd()[1]} --headless --sweep {d} --point {k}" for k in (0, 1)]
    assert [s.state for s in Sweep.open(d).states()] == ["new", "new"]  # written, nothing run


def test_the_device_pool_runs_two_points_side_by_side_each_in_a_process_of_its_own(printed, capsys):
    d, _ = printed
    sweep = Sweep.open(d)
    code = run_pool(sweep, [Slot("cpu-a", {}), Slot("cpu-b", {"CUDA_VISIBLE_DEVICES": ""})])
    out = capsys.readouterr().out.splitlines()
    assert code == 0, out
    events = [ln.split(": ", 1)[1] for ln in out if ln.startswith("[point")]
    # both started before either ended: the pool fills every free slot before it waits
    assert events[:2] == [f"started on cpu-a (log: {sweep.log_file(sweep.points[0])})",
                          f"started on cpu-b (log: {sweep.log_file(sweep.points[1])})"]
    assert sorted(events[2:]) == ["done (exit code 0)"] * 2
    assert sorted({ln.split("]")[0] for ln in out if ln.startswith("[point")}) == ["[point 1/2", "[point 2/2"]
    assert [s.state for s in sweep.states()] == ["done", "done"]
    for p in sweep.points:
        assert "30 steps in" in sweep.log_file(p).read_text()


def test_a_sweep_directory_exports_as_its_settings_drawn_as_bands(sweep):
    """`--export SWEEP_DIR --bands minmax`: the sweep stands for its points' runs, and each setting (its seeds)
    is one mean line with its band; the CSV's mean of a setting equals the NumPy mean of its seeds' losses."""
    import csv
    d, *_, later, tmp = sweep
    assert later["bands"].returncode == 0, later["bands"].stderr
    assert (tmp / "bands.svg").stat().st_size > 0
    rows = list(csv.DictReader(open(tmp / "bands.csv")))
    sw = Sweep.open(d)
    groups = {}
    for p in sw.points:
        groups.setdefault(tuple(sorted(p.setting().items())), []).append(sw.run_dir(p))
    names = {r["run"] for r in rows}
    assert len(names) == len(sw.points) // 2  # 2 seeds per setting: one line per setting
    assert all(r["low"] != "" and r["high"] != "" for r in rows)
    tag = rows[0]["tag"]
    name = rows[0]["run"]
    mine = sorted(((int(r["step"]), float(r["value"])) for r in rows if r["run"] == name and r["tag"] == tag))
    # the setting whose seeds' mean this is: the one whose seeds' mean matches at every step
    means = []
    for dirs in groups.values():
        curves = [read_scalars(x)[tag] for x in dirs]
        if all(np.array_equal(c.steps, curves[0].steps) for c in curves):
            means.append(dict(zip(curves[0].steps.tolist(), np.mean([c.values for c in curves], axis=0).tolist())))
    assert any(all(abs(m[s] - v) <= 1e-6 * max(1.0, abs(v)) for s, v in mine if s in m) and
               sum(s in m for s, _ in mine) == len(mine) for m in means)


def test_a_points_line_counts_from_one_so_the_last_says_n_of_n(tmp_path, capsys):
    sweep = write_sweep(spec_from_dict({"base": {"steps": 5}, "grid": {"seed": list(range(10))}}), tmp_path / "sw")
    for p in (sweep.points[0], sweep.points[9]):
        say(sweep, p)("started")
    assert capsys.readouterr().out.splitlines() == [f"[point  1/10] {sweep.points[0].name}: started",
                                                    f"[point 10/10] {sweep.points[9].name}: started"]
