"""Makes the docs' screenshot (docs/images/screenshot.png, shown by README.md and docs/) as a user would:
the ring GAN trains in the real window; at step 3,000 the user ticks discriminator/dense_1 in the scope
tree, at 6,000 sets the ratio to 5:1 in the schedule panel, and at 9,000 the window is saved. Run it under
a display (for the docs: on Xvfb via ../shared/tools/window-shot, which also captures the screen):

    python resources/docs/make_screenshot.py docs/images/screenshot.png
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from PySide6.QtCore import Qt, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.main_window import DEFAULT_SIZE, MainWindow  # noqa: E402


def main(out: str) -> int:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setStyle("Fusion")
    w = MainWindow(("example", "ring"), steps=9000, run_dir=None)
    w.resize(*DEFAULT_SIZE)
    w.show()
    w.start_when_ready()
    done = {"freeze": False, "ratio": False}

    def watch() -> None:
        step = w.store.last_step
        if not done["freeze"] and step >= 3000:
            done["freeze"] = True
            item = w.scope_tree.item("discriminator/dense_1")
            item.setCheckState(0, Qt.CheckState.Checked)
            w.scope_tree.select_variable("discriminator/dense_1/kernel")
        if not done["ratio"] and step >= 6000:
            done["ratio"] = True
            w.schedule_panel.steps["D"].setValue(5)
            w.schedule_panel.flush()

    timer = QTimer()
    timer.timeout.connect(watch)
    timer.start(20)

    def finish(_status: object) -> None:
        def grab() -> None:
            w.refresh()
            w.grab().save(out, "PNG")
            print(f"wrote {out}")
            w.close()
        QTimer.singleShot(500, grab)

    w.runFinished.connect(finish)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "docs" / "images" / "screenshot.png")))
