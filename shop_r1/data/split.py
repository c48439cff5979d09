"""Train/test split by session: no step of a test session is ever seen in training."""

from __future__ import annotations

import random

from shop_r1.data.schema import Session


def split_by_session(
    sessions: list[Session], test_fraction: float, seed: int = 0
) -> tuple[list[Session], list[Session]]:
    """Shuffle sessions with `seed` and hold out round(n * test_fraction) of them.

    Below a fraction of 1 training keeps at least one session (a single session trains,
    it is never held out), and above 0 at least one is held out when there are two or
    more, so a tiny smoke run still has something to evaluate. Both sides keep the
    input order.
    """
    if not 0.0 <= test_fraction <= 1.0:
        raise ValueError(f"test_fraction: must be in [0, 1], got {test_fraction}")
    n = len(sessions)
    n_test = round(n * test_fraction)
    if test_fraction < 1.0:
        n_test = min(n_test, max(n - 1, 0))
    if n >= 2 and test_fraction > 0.0:
        n_test = max(n_test, 1)
    order = list(range(n))
    random.Random(seed).shuffle(order)
    test_idx = set(order[:n_test])
    train = [s for i, s in enumerate(sessions) if i not in test_idx]
    test = [s for i, s in enumerate(sessions) if i in test_idx]
    return train, test
