"""The Qt-free run model: one run's metrics, events and samples in memory, fed live by a trainer's
batches or read from a run directory (whole, or followed as it grows). The window's plots, the scope
tree, the figure exporter, review and attach all read this one model; views subscribe, the model
never knows them (napari's model/view split).
"""
from .data import GrowArray, Marker, RunData, marker_label
from .follow import RunFollower, read_run, reload_resumed

__all__ = ["GrowArray", "Marker", "RunData", "RunFollower", "marker_label", "read_run", "reload_resumed"]
