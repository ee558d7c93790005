"""base/alternation.py: a fixed ratio gives every phase at least one step, wherever the ratio comes from (the
command line, a live or remote command, an experiment's default: tests/core/test_cli.py and
test_command_table.py run those), refused in one line naming the phase and the fix."""
from __future__ import annotations

import pytest

from training_core import UserError, parse_ratio
from training_core.base.alternation import policy_from_dict


@pytest.mark.parametrize("ratio, phase, fix", [([5, 0], "G", "5:1"), ("0:3", "D", "1:3"), ([0, 0], "D", "1:1"),
                                               ([2.0, 0.0], "G", "2:1")])
def test_a_zero_count_is_refused_naming_the_phase_and_the_fix(ratio, phase, fix):
    """`5:0` passed without a word and G never ran."""
    with pytest.raises(UserError) as e:
        policy_from_dict({"policy": "fixed", "ratio": ratio}, ["D", "G"])
    counts = parse_ratio(ratio) if isinstance(ratio, str) else [int(c) for c in ratio]
    assert str(e.value) == (f"ratio {':'.join(map(str, counts))} gives phase {phase!r} 0 steps, so it would never "
                            f"train; give every phase a count >= 1 (e.g. {fix}), or freeze what {phase} trains to "
                            f"stop it")
    assert "\n" not in str(e.value)


def test_counts_of_at_least_one_pass_and_the_source_is_named():
    from training_core.base.alternation import check_counts
    check_counts([5, 1], ["D", "G"])
    assert policy_from_dict({"ratio": "3:2"}, ["D", "G"]).counts == [3, 2]
    with pytest.raises(UserError, match=r"^default ratio 1:0 in x\.py gives phase 'B' 0 steps"):
        check_counts([1, 0], ["A", "B"], "default ratio", " in x.py")
