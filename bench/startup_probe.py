"""Run as a child process: prints when the window is on screen (seconds since the parent launched it)
and how long after Start the first training step arrived, then exits."""
import os
import sys
import time

launched = float(sys.argv[1])
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from bench.window_bench import qapp, wait_for  # noqa: E402

qapp()
from app.main_window import MainWindow  # noqa: E402

w = MainWindow(("example", "ring"), run_dir=sys.argv[2])
shown = []
w.firstShown.connect(lambda: shown.append(time.time()))
w.show()
wait_for(lambda: shown, 60)
print(f"visible {shown[0] - launched:.3f}", flush=True)
wait_for(lambda: w.prepared is not None and not w.busy, 120)
pressed = time.perf_counter()
w.start()
wait_for(lambda: w.store.last_step >= 1, 120)
print(f"first_step {time.perf_counter() - pressed:.3f}", flush=True)
w.close()
wait_for(lambda: not w.running, 30)
