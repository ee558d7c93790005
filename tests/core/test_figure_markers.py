"""Who a figure's marker names (training_core/figures/markers.py: `entity_markers`, `figure_markers`): a group
of seeds drawn as a band, not one of its runs, with how many of its seeds have the event; and an event the
owners' names already say is said once."""
from __future__ import annotations

from training_core.figures.markers import MarkerLine, entity_markers, figure_markers
from training_core.runs import RunData


class Marker:
    def __init__(self, step: int, kind: str, label: str) -> None:
        self.step, self.kind, self.label = step, kind, label


def run(*markers: tuple[int, str, str]) -> RunData:
    store = RunData()
    store.markers = [Marker(*m) for m in markers]
    return store


FREEZE = (150, "freeze", "freeze: d/dense_1")
RESUMED = (300, "resumed", "resumed")


def lines_of(groups: dict[str, list[RunData]]) -> list[MarkerLine]:
    per = [entity_markers([(f"{name}-seed={s}", r) for s, r in enumerate(runs)], lambda _, m: float(m.step),
                          ["freeze", "resumed"]) for name, runs in groups.items()]
    return figure_markers(per, list(groups))


def test_an_event_of_one_seed_names_its_group_and_the_count():
    """One of a setting's two seeds resumed from a checkpoint: the label named that seed's run
    ("ratio=1:1-seed=1: resumed"), which the figure draws only as part of the band."""
    lines = lines_of({"ratio=1:1": [run(FREEZE), run(FREEZE, RESUMED)], "ratio=3:1": [run(FREEZE), run(FREEZE)]})
    assert lines == [MarkerLine(150.0, "freeze", "freeze: d/dense_1"),
                     MarkerLine(300.0, "resumed", "ratio=1:1 (1 of 2 seeds): resumed")]
    three = lines_of({"a": [run(RESUMED), run(RESUMED), run()]})  # a figure of one group: the count alone
    assert three == [MarkerLine(300.0, "resumed", "(2 of 3 seeds): resumed")]


def test_a_freeze_every_seed_shares_is_one_line():
    lines = lines_of({"1:1": [run(FREEZE), run(FREEZE), run(FREEZE)]})
    assert lines == [MarkerLine(150.0, "freeze", "freeze: d/dense_1")]


def test_a_planned_freeze_named_by_its_settings_is_not_said_twice():
    """A sweep's `freeze=d/dense_1@150` settings: their shared word says what froze and when; the label read
    "freeze=d/dense_1@150: freeze: d/dense_1", the same freeze twice, wrapped onto two rows."""
    names = ["ratio=1:1 freeze=none", "ratio=1:1 freeze=d/dense_1@150", "ratio=3:1 freeze=d/dense_1@150"]
    groups = {n: [run(FREEZE) if "@" in n else run(), run(FREEZE) if "@" in n else run()] for n in names}
    assert [m.label for m in lines_of(groups)] == ["freeze=d/dense_1@150"]
    other = dict(groups, **{names[1]: [run((150, "freeze", "freeze: g")), run((150, "freeze", "freeze: g"))]})
    assert {m.label for m in lines_of(other)} == {"ratio=3:1 freeze=d/dense_1@150: freeze: d/dense_1",
                                                  "ratio=1:1 freeze=d/dense_1@150: freeze: g"}


def leaks(step: int, *variables: str) -> list[tuple[int, str, str]]:
    return [(step, "leak", f"leak {v}") for v in variables]


D = ("discriminator/h1/kernel", "discriminator/h1/bias", "discriminator/out/kernel", "discriminator/out/bias")


def test_the_leaks_of_one_step_are_one_label_naming_their_scope():
    """fit() ignoring `discriminator.trainable = False` leaks all four weights at one step: one line, one label
    (four stacked over one line said the same thing four times); a leak alone keeps its variable's name."""
    r = run(*leaks(112, *D), *leaks(200, "generator/out/bias"), *leaks(250, D[0], D[1]), FREEZE)
    lines = figure_markers([entity_markers([("a", r)], lambda _, m: float(m.step), ["leak", "freeze"])], ["a"])
    assert lines == [MarkerLine(112.0, "leak", "leak: discriminator (4 variables)"),
                     MarkerLine(150.0, "freeze", "freeze: d/dense_1"),
                     MarkerLine(200.0, "leak", "leak generator/out/bias"),
                     MarkerLine(250.0, "leak", "leak: discriminator/h1 (2 variables)")]


def test_leaks_in_two_models_at_one_step_name_no_scope():
    r = run(*leaks(112, D[0], "generator/out/bias"))
    marks = entity_markers([("a", r)], lambda _, m: float(m.step), ["leak"])
    assert list(marks) == [(112, "leak", "leak: 2 variables")]
