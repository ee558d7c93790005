"""The window's side panels: what to train, how phases alternate, and which scopes are frozen."""
from .experiment import ExperimentPanel
from .layout import panels_beside_plots
from .schedule import SchedulePanel, SciSpinBox
from .scope_tree import ScopeTree

__all__ = ["ExperimentPanel", "SchedulePanel", "SciSpinBox", "ScopeTree", "panels_beside_plots"]
