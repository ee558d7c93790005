"""A row of control groups that wraps onto two lines when the window is too narrow for one.

Why: the loss controls and the update-view controls above the plots made one row ~870 px wide, and
a row's minimum width is the sum of its parts: with the left tabs and the samples view the window could
not be narrower than 1,421 px, so on a 1280- or 1366-px laptop screen its right side (the samples) was
cut off. This row asks only for its widest group, and lays the groups out side by side when they fit,
one above the other when they do not.
"""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets


class WrapRow(QtWidgets.QWidget):
    """Groups (layouts) side by side when the width allows, else stacked; minimum width: the widest group."""

    def __init__(self, groups: list[QtWidgets.QLayout], spacing: int = 12,
                 parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self._box = QtWidgets.QBoxLayout(QtWidgets.QBoxLayout.Direction.LeftToRight, self)
        self._box.setContentsMargins(0, 0, 0, 0)
        self._box.setSpacing(spacing)
        # not the layout's own minimum (the one-line sum) as the widget's, had it no parent
        self._box.setSizeConstraint(QtWidgets.QLayout.SizeConstraint.SetNoConstraint)
        self._groups = groups
        for g in groups:
            self._box.addLayout(g)
        self._box.addStretch(1)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Preferred, QtWidgets.QSizePolicy.Policy.Fixed)

    @property
    def wrapped(self) -> bool:
        """Whether the groups are stacked (the row was too narrow for them side by side)."""
        return self._box.direction() == QtWidgets.QBoxLayout.Direction.TopToBottom

    def _one_line_width(self) -> int:
        hints = [g.sizeHint().width() for g in self._groups]
        return sum(hints) + self._box.spacing() * (len(hints) - 1)

    def minimumSizeHint(self) -> QtCore.QSize:  # noqa: N802 - Qt override
        widest = max(g.minimumSize().width() for g in self._groups)
        return QtCore.QSize(widest, super().minimumSizeHint().height())

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        self._fit(event.size().width())
        super().resizeEvent(event)

    def _fit(self, width: int) -> None:
        direction = (QtWidgets.QBoxLayout.Direction.LeftToRight if width >= self._one_line_width()
                     else QtWidgets.QBoxLayout.Direction.TopToBottom)
        if direction != self._box.direction():
            self._box.setDirection(direction)
            self.updateGeometry()  # the height changes: one line or two
