"""Live plots of a run: losses, update magnitudes with control markers, and samples (`PlotsPanel`).

`palette` holds every colour and line style, for the figure export to reuse.
"""
from .panel import PlotsPanel

__all__ = ["PlotsPanel"]
