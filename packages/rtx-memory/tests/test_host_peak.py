import tracemalloc

import numpy as np

import rtx.memory

MB = 2 ** 20


def test_a_10_mb_array_inside_the_block_shows_in_the_peak():
    with rtx.memory.host_peak() as m:
        a = np.ones(10 * MB // 8)
        assert m.current >= 10 * MB          # live while inside
        del a
    assert m.peak >= 10 * MB
    assert m.current < 1 * MB                # freed before the block ended
    assert not tracemalloc.is_tracing()      # started for the block, stopped after it


def test_peak_counts_what_is_alive_at_once():
    with rtx.memory.host_peak() as together:
        a, b = np.ones(4 * MB // 8), np.ones(4 * MB // 8)
        del a, b
    with rtx.memory.host_peak() as one_at_a_time:
        a = np.ones(4 * MB // 8)
        del a
        b = np.ones(4 * MB // 8)
        del b
    assert together.peak >= 8 * MB
    assert 4 * MB <= one_at_a_time.peak < 6 * MB


def test_blocks_nest_without_losing_the_outer_peak():
    with rtx.memory.host_peak() as outer:
        a = np.ones(6 * MB // 8)
        del a
        with rtx.memory.host_peak() as inner:   # resets tracemalloc's peak inside
            b = np.ones(2 * MB // 8)
            del b
    assert outer.peak >= 6 * MB
    assert 2 * MB <= inner.peak < 4 * MB


def test_leaves_tracing_on_when_someone_else_started_it():
    tracemalloc.start()
    try:
        x = np.ones(MB // 8)  # allocated before the block: not counted
        with rtx.memory.host_peak() as m:
            y = np.ones(2 * MB // 8)
        assert tracemalloc.is_tracing()
        assert 2 * MB <= m.peak < 3 * MB and m.current >= 2 * MB
        del x, y
    finally:
        tracemalloc.stop()
