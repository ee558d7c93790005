"""Freezeframe's benchmark: `python bench/run.py` (full) or `python bench/run.py --quick` (CI: checks it
runs; no timing assertion). Prints a table against the targets; the last line is exactly
`ratios: headless/bare=X window/bare=Y fit_tb/bare=Z mirrored2/bare_mirrored2=M headless_jit/bare=J`.
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def startup(runs: int) -> dict:
    vis, first = [], []
    for _ in range(runs):
        run_dir = str(Path(tempfile.mkdtemp(prefix="ff-bench-start-")) / "run")
        out = subprocess.run([sys.executable, str(ROOT / "bench" / "startup_probe.py"), repr(time.time()), run_dir],
                             capture_output=True, text=True, timeout=300, cwd=ROOT)
        vals = dict(line.split() for line in out.stdout.splitlines() if line.split()[:1] in (["visible"], ["first_step"]))
        if len(vals) != 2:
            raise RuntimeError(f"startup probe failed: {out.stderr[-2000:]}")
        vis.append(float(vals["visible"]))
        first.append(float(vals["first_step"]))
    return {"window_visible_s": sorted(vis)[len(vis) // 2], "first_step_after_start_s": sorted(first)[len(first) // 2]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes: checks the benchmark runs (CI)")
    a = ap.parse_args(argv)
    q = a.quick
    chunk, rounds = (100, 2) if q else (600, 7)
    from app.scheduling import gui_intra_op_threads
    from training_core.engine.tf_quiet import import_tensorflow
    import_tensorflow(gui_intra_op_threads())  # the rest measures the window: configure as its process
    from bench.control import measure_control
    from bench.disk import measure_disk, measure_wide_disk
    from bench.metrics_bench import measure as measure_metrics
    from bench.monitor_bench import in_child as measure_monitor
    from bench.paint_bench import measure_gil_free_painting
    from bench.steering import measure_command_file
    from bench.tfdata_bench import measure as measure_tfdata
    from bench.tfdata_window import measure as measure_tfdata_window
    from bench.throughput import in_child
    from bench.wide_startup import measure as measure_wide_startup
    from bench.wide_window import measure as measure_wide_window
    from bench.window_bench import measure_memory, measure_responsiveness

    print(f"Freezeframe benchmark, {date.today()}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}{' (quick)' if q else ''}", flush=True)
    cli = in_child(["bare", "bare_norms", "fit_tb", "headless", "headless_nocmd", "headless_jit"], chunk, rounds,
                   gui_process=False)
    gui = in_child(["bare", "window", "bare_again"], chunk, rounds, gui_process=True)
    mir = in_child(["bare_mirrored2", "mirrored2"], chunk, rounds, gui_process=False, kind="mirrored")
    ratios = {"headless": cli["headless"] / cli["bare"], "fit_tb": cli["fit_tb"] / cli["bare"],
              "window": gui["window"] / gui["bare"], "mirrored2": mir["mirrored2"] / mir["bare_mirrored2"],
              "headless_jit": cli["headless_jit"] / cli["bare"]}
    rows = [("throughput bare (CLI process)", f"{cli['bare']:.0f} steps/s", "reference"),
            ("throughput bare_norms (the per-step norms alone)", f"{cli['bare_norms']:.0f} steps/s = "
             f"{cli['bare_norms'] / cli['bare']:.3f} x bare", "(reported: the ceiling of headless/bare)"),
            ("throughput fit_tb", f"{cli['fit_tb']:.0f} steps/s = {ratios['fit_tb']:.3f} x bare", "(keras.io pattern)"),
            ("throughput headless", f"{cli['headless']:.0f} steps/s = {ratios['headless']:.3f} x bare", ">= 0.97 x bare"),
            ("commands.jsonl reader (throughput)", f"headless with / without it = "
             f"{cli['headless'] / cli['headless_nocmd']:.3f} ({cli['headless_nocmd']:.0f} steps/s without)",
             "1.00 within noise"),
            ("throughput bare (window process)", f"{gui['bare']:.0f} steps/s", "reference"),
            ("throughput window", f"{gui['window']:.0f} steps/s = {ratios['window']:.3f} x bare", ">= 0.93 x bare"),
            ("the same bare loop measured again (an A/A test: the harness's own spread in this run)",
             f"{gui['bare_again']:.0f} steps/s = {gui['bare_again'] / gui['bare']:.3f} x bare",
             "(reported: 1.000 on a quiet machine)"),
            ("throughput window, by the training's own step clock", f"{gui['window_clock']:.0f} steps/s = "
             f"{gui['window_clock'] / gui['bare']:.3f} x bare (the rest: the command's and the last batch's trips "
             "per chunk)", "(reported)"),
            ("throughput headless --jit (XLA)", f"{cli['headless_jit']:.0f} steps/s = {ratios['headless_jit']:.3f} x bare",
             "(reported)"),
            ("throughput bare_mirrored2 (2 replicas)", f"{mir['bare_mirrored2']:.0f} steps/s", "reference"),
            ("throughput mirrored2", f"{mir['mirrored2']:.0f} steps/s = {ratios['mirrored2']:.3f} x bare_mirrored2",
             ">= 0.95 x bare_mirrored2")]
    # metrics beside training: none and sleep3 stepped in turn (chunks of 2,000 steps, 30 rounds; --quick: 300, 4),
    # then the CPU-bound measure alone for 65 s (--quick: 8 s)
    mb = measure_metrics(300 if q else 2000, 4 if q else 30, 8.0 if q else 65.0)
    il, cpu = mb["interleaved"], mb["cpu"]
    measures = (f"{il['measures']} measures of up to {il['cost']:.1f} s beside training" if il["measures"] else
                "no measure after the step-0 one in a run this short")
    rows.append(("metric of 3 s (sleep) against none: steps/s ratio (headless ring, interleaved)",
                 f"{il['ratio']:.3f} ({il['sleep3']:.0f} vs {il['none']:.0f} steps/s; {measures})", ">= 0.97"))
    rows.append(("CPU-bound metric (numpy FID + KID, 2,048 x 32) beside training, for the record",
                 f"{cpu['measures']} measure(s) of up to {cpu['cost']:.1f} s, in flight {cpu['share_measuring']:.0%} of "
                 f"the run; training at {cpu['rate_measuring']:.0f} steps/s while one runs, "
                 f"{cpu['rate_not_measuring']:.0f} otherwise", "(reported)"))
    # the shapes DCGAN on tf.data, headless against a bare loop over the same pipeline, in turn (chunks of 300
    # steps, 6 rounds; --quick: 20 steps, 2 rounds, without the two variants kept for the record)
    tf_ = measure_tfdata(20 if q else 300, 2 if q else 6, ["headless", "bare", "bare_again"] if q else None)
    r_, ref_ = tf_["steps_per_s"], tf_["reference"]
    rows.append(("throughput bare, shapes DCGAN on tf.data (bench/tfdata_bench.py; the faster of the batch read "
                 "inside the step and passed in)", f"{r_[ref_]:.1f} steps/s ({ref_}" + (
                     f"; batch passed in / read inside = {tf_['bare_fed_over_bare']:.3f}" if "bare_fed" in r_ else "")
                 + f"; the same loop again = {tf_['aa']:.3f} x, the A/A spread)", "reference"))
    rows.append(("throughput headless, shapes DCGAN on tf.data (FID/KID every ~10 s, samples, the full record)",
                 f"{r_['headless']:.1f} steps/s = {tf_['headless_over_bare']:.3f} x bare" + (
                     f" (without its metrics: {tf_['headless_nomet_over_bare']:.3f} x)" if "headless_nomet" in r_
                     else ""), ">= 0.97 x bare"))
    # the same DCGAN trained from the real window against the bare loop with the window's TensorFlow settings, in
    # turn (chunks of 300 steps, 6 rounds; --quick: 20 steps, 2 rounds, without the loop with the batch passed in)
    tw = measure_tfdata_window(20 if q else 300, 2 if q else 6, ["window", "bare", "bare_again"] if q else None)
    r_, ref_ = tw["steps_per_s"], tw["reference"]
    rows.append(("throughput bare, shapes DCGAN on tf.data, window process (bench/tfdata_window.py; the faster of "
                 "the batch read inside the step and passed in)", f"{r_[ref_]:.1f} steps/s ({ref_}; the same loop "
                 f"again = {tw['aa']:.3f} x, the A/A spread)", "reference"))
    rows.append(("throughput window, shapes DCGAN on tf.data (the real window: plots, FID/KID curves, sample grid)",
                 f"{r_['window']:.1f} steps/s = {tw['window_over_bare']:.3f} x bare" + (
                     f" (by the training's own step clock {tw['window_clock_over_bare']:.3f} x)"
                     if "window_clock" in r_ else ""), ">= 0.93 x bare (against the A/A spread)"))
    # the monitor (issue 25): the same training with and without it, chunks alternating in one process
    mon = measure_monitor(q)
    px = mon["dcgan_size"]["pixels"]
    for key, what in (("loop_ring", "hand-written loop, ring-size (start_run, apply_gradients, log, boundary)"),
                      ("fit_ring", "fit(), ring-size (Monitor callback)"),
                      ("loop_dcgan", f"hand-written loop, DCGAN-size ({px}x{px}, keras.io's models)"),
                      ("fit_dcgan", f"fit(), DCGAN-size ({px}x{px}, keras.io's models)")):
        m = mon[key]
        fresh = (f", mean of {len(m['generations'])} generations of fresh copies ± {m['ratio_se']:.3f} (standard "
                 "error)") if "generations" in m else ""
        rows.append((f"monitor cost: {what}: step time with / without", f"{m['ratio']:.3f} ({m['b_ms']:.2f} vs "
                     f"{m['a_ms']:.2f} ms a step){fresh}", "<= 1.03"))
    aa, graph, fixed = mon["loop_ring_aa"], mon["loop_ring_graph"], mon["loop_ring_fixed"]
    rows.append(("monitor cost: hand-written loop, ring-size, start_run(..., live_freeze=False) (the freeze set fixed "
                 "at the start, no restore point): step time with / without", f"{fixed['ratio']:.3f} ± "
                 f"{fixed['ratio_se']:.3f} ({fixed['b_ms']:.2f} vs {fixed['a_ms']:.2f} ms a step)", "<= 1.03"))
    rows.append(("monitor cost: the ring loop's step with run.apply_gradients, no log/boundary (the graph's part)",
                 f"{graph['ratio']:.3f} ± {graph['ratio_se']:.3f}", "(reported: a split of the row above)"))
    rows.append(("monitor cost: the bare ring loop against itself (A/A: the harness's spread in this run)",
                 f"{aa['ratio']:.3f} ± {aa['ratio_se']:.3f}", "(reported: 1.000 on a quiet machine)"))
    cmd = measure_command_file(2_000 if q else 20_000)
    rows.append(("commands.jsonl reader (a look)", f"{cmd['look_us']:.1f} us with nothing new, "
                 f"{cmd['look_with_command_us']:.1f} us reading a command; at most 4 looks/s = "
                 f"{100 * cmd['share_of_time']:.4f}% of the time; nothing per step", "not measurable"))
    resp = measure_responsiveness(20_000 if q else 1_000_000, 2.0 if q else 15.0)
    rows.append(("timer lateness, 10 ms timer", f"p99 {resp['p99_ms']:.1f} ms, max {resp['max_ms']:.1f} ms "
                 f"({resp['points_per_loss_curve']:,} pts/loss curve, {resp['live_steps']} live steps)",
                 "p99 < 16 ms, max < 50 ms"))
    paint = measure_gil_free_painting(0.4 if q else 0.8, 1 if q else 5)
    rows.append(("Python thread speed while the plots repaint", f"Canvas {paint['canvas']:.2f}, pyqtgraph's own view "
                 f"{paint['pyqtgraph']:.2f} of its idle speed = {paint['canvas'] / paint['pyqtgraph']:.1f} x "
                 f"({paint['paints']['canvas']} and {paint['paints']['pyqtgraph']} paints)",
                 "Canvas > 0.5 and > 3 x pyqtgraph's"))
    ctl = measure_control(300 if q else 1200)
    rows.append(("control change -> effect", f"applied {max(ctl['steps_from_send_to_apply'])} step(s) after sending; "
                 f"first zero update at step {ctl['first_zero_update_step']} (freeze at {ctl['freeze_event_step']})",
                 "next step boundary"))
    rows.append(("traces after warm-up", f"{ctl['traces_after_warm_up']} (warm-up: {ctl['traces_at_warm_up']}, "
                 f"{ctl['traces_before_first_step']} of them before the first step)", "0"))
    mem = measure_memory(20_000 if q else 1_000_000)
    rows.append(("window RSS growth", f"{mem['growth_MB']:.0f} MB over {mem['steps']:,} steps "
                 f"(peak {mem['peak_MB']:.0f} MB)", "< 200 MB per 10^6 steps"))
    disk = measure_disk(2_000 if q else 20_000)
    rows.append(("run directory size", f"{disk['MB_per_1e6_steps']:.0f} MB per 10^6 steps "
                 f"(from {disk['steps']:,} steps)", "< 200 MB, reported"))
    # --quick: 17 layers per model (68 variables, still above TensorBoard's per-variable limit), 300 steps
    wd = measure_wide_disk(17 if q else 125, 300 if q else 3_000)
    rows.append((f"run directory size, {wd['variables']} variables (bench/wide_gan.py)",
                 f"{wd['MB_per_1e6_steps']:.0f} MB per 10^6 steps (from {wd['steps']:,} steps at "
                 f"{wd['steps_per_s']:.0f} steps/s): " + ", ".join(
                     f"{k} {wd[k + '_MB']:.0f}" for k in ("variables", "scalars_csv", "tb", "samples", "checkpoints",
                                                          "models", "events")), "< 500 MB (500 variables)"))
    wide = measure_wide_startup(16 if q else 125)
    st_ = wide["stages"]
    plain = st_["import"] + sum(wide["bare"][k] for k in ("build_s", "trace_s", "first_call_s"))  # same run's reference
    floor = plain - wide["bare"]["trace_s"]  # the plain loop with its trace taken away: what no tracing trick can beat
    traced = ", ".join(f"{k} {v:.1f}" for k, v in st_.items() if k.startswith(("trace", "check")))
    rows.append((f"wide start-up ({wide['variables']} variables)", f"first step {wide['first_step_s']:.1f} s after "
                 f"preparing began (import {st_['import']:.1f}, build {st_['build']:.1f}, optimizers "
                 f"{st_['optimizers']:.1f}, {traced}, run directory and step-0 checkpoint {wide['run_setup_s']:.1f}, "
                 f"first call {wide['first_call_s']:.1f}); every phase stepped {wide['every_phase_s']:.1f} s; "
                 f"{wide['traces']} traces, {wide['retraces']} retraces; a plain "
                 f"tf.function loop of one phase: build {wide['bare']['build_s']:.1f}, trace {wide['bare']['trace_s']:.1f}, "
                 f"first call {wide['bare']['first_call_s']:.1f}, so with the same import its first step at {plain:.1f} s "
                 f"= {wide['first_step_s'] / plain:.2f} x; without its trace (import, build, first call) {floor:.1f} s",
                 "< 10 s (500 variables)"))
    ww = measure_wide_window(5 if q else 30)
    rows.append(("window refresh, 500 vs 12 variables", f"{ww['total_wide_ms']:.1f} vs {ww['total_small_ms']:.1f} ms "
                 f"a tick with data = {ww['ratio']:.2f} x (scope tree {ww['wide']['tree']:.2f} vs "
                 f"{ww['small']['tree']:.2f} ms; 500 drawn as the heat map; ticks interleaved)", "≤ 1.2 x"))
    st = startup(1 if q else 3)
    rows.append(("window visible after launch", f"{st['window_visible_s']:.2f} s", "< 2 s"))
    rows.append(("first step after Start", f"{st['first_step_after_start_s']:.2f} s", "< 5 s"))
    print()
    print("| measure | result | target |")
    print("| --- | --- | --- |")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} |")
    print(f"ratios: headless/bare={ratios['headless']:.3f} window/bare={ratios['window']:.3f} "
          f"fit_tb/bare={ratios['fit_tb']:.3f} mirrored2/bare_mirrored2={ratios['mirrored2']:.3f} "
          f"headless_jit/bare={ratios['headless_jit']:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # Qt and TensorFlow threads need no orderly teardown here
