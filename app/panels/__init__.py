"""The window's side panels: what to train, how phases alternate, which scopes are frozen, and the runs
the plots show."""
from .experiment import ExperimentPanel
from .layout import beside_plots, left_tabs, panels_column
from .schedule import SchedulePanel, SciSpinBox
from .runs import RunsPanel
from .scope_tree import ScopeTree

__all__ = ["ExperimentPanel", "RunsPanel", "SchedulePanel", "SciSpinBox", "ScopeTree", "beside_plots",
           "left_tabs", "panels_column"]
