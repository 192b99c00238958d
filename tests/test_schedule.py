import math

import pytest

from lnrepro.core.schedule import Schedule


@pytest.mark.parametrize("n, expected", [
    (0, 0.0), (1000, 1.25e-4), (2000, 2.5e-4), (4000, 5e-4), (16000, 2.5e-4), (64000, 1.25e-4),
])
def test_inverse_sqrt_with_warmup_matches_fairseq(n, expected):
    assert Schedule("inverse_sqrt", lr=5e-4, warmup=4000)(n) == pytest.approx(expected)


def test_inverse_sqrt_warmup_starts_at_warmup_init_lr():
    s = Schedule("inverse_sqrt", lr=7e-4, warmup=6000, warmup_init_lr=1e-7)
    assert s(0) == pytest.approx(1e-7)
    assert s(3000) == pytest.approx(1e-7 + 0.5 * (7e-4 - 1e-7))


def test_no_warmup_inverse_sqrt_is_lr_over_sqrt_n():
    s = Schedule("inverse_sqrt", lr=1e-3, warmup=1)  # the paper's T_warmup = 1
    assert s(0) == 0.0  # n = 0 < W: fairseq's first update runs at warmup_init_lr
    assert s(1) == pytest.approx(1e-3)
    assert s(4) == pytest.approx(5e-4)
    assert s(100) == pytest.approx(1e-4)


def test_step_decay_at_epoch():
    s = Schedule("step", lr=5e-4, decay_epoch=8, decay_factor=0.1)
    assert [s(10, e) for e in (1, 7, 8, 20)] == pytest.approx([5e-4, 5e-4, 5e-5, 5e-5])


def test_step_then_inverse_sqrt():
    s = Schedule("step_inverse_sqrt", lr=1.5e-3, decay_epoch=6)
    assert s(100, 5, updates_at_decay=500) == pytest.approx(1.5e-3)
    assert s(500, 6, updates_at_decay=500) == pytest.approx(1.5e-4)
    assert s(2000, 9, updates_at_decay=500) == pytest.approx(1.5e-4 * math.sqrt(500 / 2000))


def test_linear_decay_to_zero():
    s = Schedule("linear", lr=5e-4, total_updates=1000)
    assert [s(n) for n in (0, 500, 1000, 2000)] == pytest.approx([5e-4, 2.5e-4, 0.0, 0.0])


def test_constant_ignores_warmup_and_epochs():
    s = Schedule("constant", lr=1e-4, warmup=4000)
    assert s(0) == s(10**6, 30) == 1e-4


def test_unknown_schedule_is_a_clear_error():
    with pytest.raises(ValueError, match="inverse_sqrt"):
        Schedule("cosine", lr=1e-3)
