"""The Qt-free run model: one run's metrics, events and samples in memory, fed live by a trainer's
batches or read from a run directory (whole, or followed as it grows); each variable's state derived
from them; several runs side by side (`RunSet`, what a window compares); and the window's whole state
around a run (`Session`). The window's plots, the scope
tree, the figure exporter, review and attach all read this one model; views subscribe, the model
never knows them (napari's model/view split).
"""
from training_core.runs.collection import LIVE, RunEntry, RunSet, unique_labels
from training_core.runs.data import GrowArray, Marker, RunData, marker_label
from training_core.runs.follow import RunFollower, read_run, reload_resumed
from training_core.runs.session import Session, Source, nan_message, source_of
from training_core.runs.variables import STATES, VariableStates, VarState, frozen_spans, spans_text, unrecorded_paths

__all__ = ["LIVE", "GrowArray", "Marker", "RunData", "RunEntry", "RunFollower", "RunSet", "STATES", "Session",
           "Source", "VarState", "VariableStates", "frozen_spans", "marker_label", "nan_message", "read_run",
           "reload_resumed", "source_of", "spans_text", "unique_labels", "unrecorded_paths"]
