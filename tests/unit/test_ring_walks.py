"""The ring walks that carry-ring-positions writes into a partitioned kernel, as
`mmcomp.analysis.ring_positions` reads them: ping-pong's tile counter and turn, and the
non-specialized kernels' load position and loads ahead."""

from __future__ import annotations

from typing import Any

import pytest
from cases import partitioned
from xdsl.dialects import scf
from xdsl.dialects.builtin import IndexType

from mmcomp.analysis.ring_positions import (
    is_load_ahead,
    k_block_advance,
    k_block_ops,
    load_start_of,
    positions_carried,
    ring_start_of,
    tile_counter,
    turn_of,
    walk_carried,
)
from mmcomp.analysis.warp_roles import mainloop_of, warp_roles
from mmcomp.dialects import hopper


def consumer_region(func: Any) -> Any:
    """The consumer region of a partitioned kernel."""
    roles = func.body.block.first_op
    assert isinstance(roles, hopper.WarpSpecializeOp)
    return roles.consumer


@pytest.mark.parametrize("name", ["pingpong_linear", "split_k_pingpong", "cluster_pingpong"])
def test_the_ping_pong_turn_holds_the_rest_of_the_tile(name: str):
    func = partitioned(name)
    loop = mainloop_of(func)
    turn = turn_of(loop)
    assert turn is not None
    # The K loop opens the else-block; the then-block skips the other consumer's tile.
    assert turn.false_region.block.first_op is loop
    skip = turn.true_region.block.first_op
    assert isinstance(skip, hopper.RingSkipOp)
    assert (skip.lower, skip.upper, skip.step) == (loop.lb, loop.ub, loop.step)
    assert skip.position is loop.iter_args[0]
    # The turn returns the position after the tile, which the loop over tiles yields.
    tiles = turn.parent_op()
    assert isinstance(tiles, scf.ForOp)
    yielded = tiles.body.block.last_op
    assert isinstance(yielded, scf.YieldOp)
    assert yielded.operands[0] is turn.results[0]


def test_the_tile_counter_is_carried_after_the_position():
    func = partitioned("pingpong_linear")
    turn = turn_of(mainloop_of(func))
    assert turn is not None
    counter = tile_counter(turn)
    tiles = turn.parent_op()
    assert isinstance(tiles, scf.ForOp)
    assert (positions_carried(tiles), walk_carried(tiles)) == (1, 2)
    assert counter is tiles.body.block.args[2]
    assert isinstance(counter.type, IndexType)
    # It starts at 0 after the ring start and goes one on after the turn.
    start = ring_start_of(consumer_region(func))
    assert start is not None and start.next_op is tiles.iter_args[1].owner
    following = turn.next_op
    assert following is not None and following.next_op is not None
    assert following.next_op.operands[0] is counter


@pytest.mark.parametrize("name", ["linear_ragged", "none_linear", "swap_ab_silu_mul"])
def test_other_modes_take_no_turns(name: str):
    loop = mainloop_of(partitioned(name))
    assert turn_of(loop) is None


@pytest.mark.parametrize("name", ["none_linear", "none_split_k", "none_one_tile"])
def test_thread_0_loads_stages_minus_one_blocks_ahead(name: str):
    func = partitioned(name)
    stages = warp_roles(func).stages
    loop = mainloop_of(func)
    region = consumer_region(func)
    assert load_start_of(region) is not None
    assert positions_carried(loop) == 2
    tile = loop.parent_block()
    assert tile is not None
    before = [op for op in tile.ops if is_load_ahead(op)]
    inside = [op for op in loop.body.block.ops if is_load_ahead(op)]
    assert len(before) == stages - 1 and len(inside) == 1
    # The K loop starts at the position after the first blocks and yields the load ahead's.
    assert loop.iter_args[1] is before[-1].results[0]
    yielded = loop.body.block.last_op
    assert isinstance(yielded, scf.YieldOp)
    assert yielded.operands[1] is inside[0].results[0]
    # A K block's own ops end at its advance; the load ahead follows it.
    assert inside[0] not in k_block_ops(loop)
    assert k_block_advance(loop).next_op is not None
    assert all(not is_load_ahead(op) for op in k_block_ops(loop))


@pytest.mark.parametrize("name", ["linear_ragged", "pingpong_linear"])
def test_specialized_kernels_have_no_load_position(name: str):
    func = partitioned(name)
    assert load_start_of(consumer_region(func)) is None
    assert positions_carried(mainloop_of(func)) == 1
