"""The epilogue's element accesses at the hopper level: typed values, not registers.

An epilogue operand is loaded by `hopper.global_load` as bf16 / f16 / f32 values, an output
stored by `hopper.global_store` (a `hopper.truncf_pair` or f32 values), both at i64
addresses of the address arithmetic (the array's address read as an i64) and guarded by
i1 bounds tests, the column test a signed i32 count; the smem epilogue writes its f32
rows with `hopper.smem_store`; split-K stores its partial tiles and sums them as f32
values. The examples without stream-K hold no register at the hopper level.
"""

from __future__ import annotations

import pytest
from cases import case
from test_epilogue_arith import example, hopper_level
from xdsl.dialects import arith
from xdsl.dialects.builtin import BFloat16Type, Float32Type, ModuleOp, i1, i32, i64
from xdsl.ir import SSAValue

from mmcomp.dialects import hopper, ptx

REGISTER_FREE_EXAMPLES = [
    "linear_bf16",
    "linear_bias_f16",
    "linear_bias_gelu",
    "linear_relu_scale",
    "linear_scheduled",
    "matmul",
    "batched_matmul",
    "fused_multiply_sum",
]
"""The examples whose heuristic schedules have no stream-K sum (every example but the three
with hybrid stream-K: its running sums and arrival counter are still registers)."""


def registers(module: ModuleOp) -> list[SSAValue]:
    """Every value of the module held in a ptx register type."""
    found: list[SSAValue] = []
    for op in module.walk():
        values = [*op.operands, *op.results]
        values += [arg for region in op.regions for block in region.blocks for arg in block.args]
        found += [value for value in values if isinstance(value.type, ptx.RegType)]
    return found


@pytest.mark.parametrize("name", REGISTER_FREE_EXAMPLES)
def test_an_example_hopper_level_holds_no_register(name: str):
    module = hopper_level(example(name), {})
    assert not registers(module)


def test_an_epilogue_operand_is_loaded_as_typed_values():
    module = hopper_level(example("linear_bias_gelu"), {})
    loads = [op for op in module.walk() if isinstance(op, hopper.GlobalLoadOp)]
    assert loads
    for load in loads:
        assert load.address.type == i64
        assert [value.type for value in load.values] == [BFloat16Type()] * 2
        assert load.guard is not None and load.guard.type == i1


def test_the_column_bound_is_a_signed_count():
    selected = case("linear_ragged")
    module = hopper_level(selected.fusion().module, selected.params)
    counts = [
        op for op in module.walk() if isinstance(op, arith.IndexCastOp) and op.result.type == i32
    ]
    signed = [op for op in module.walk() if isinstance(op, arith.CmpiOp) and op.lhs.type == i32]
    assert counts and signed
    assert {op.predicate.value.data for op in signed} == {4}  # sgt
    stores = [op for op in module.walk() if isinstance(op, hopper.GlobalStoreOp)]
    assert stores and all(store.guard is not None for store in stores)


def test_the_f32_rows_of_the_smem_epilogue_are_typed_stores():
    module = hopper_level(example("matmul"), {})
    stores = [op for op in module.walk() if isinstance(op, hopper.SmemStoreOp)]
    assert stores
    for store in stores:
        assert [value.type for value in store.values] == [Float32Type()] * 2
        assert isinstance(store.address.type, hopper.SmemType)
        assert store.address.type.align.data >= 8


@pytest.mark.parametrize("name", ["split_k_linear", "smem_split_k"])
def test_split_k_partials_are_stored_and_summed_as_f32_values(name: str):
    selected = case(name)
    module = hopper_level(selected.fusion().module, selected.params)
    stores = [op for op in module.walk() if isinstance(op, hopper.GlobalStoreOp)]
    partials = [op for op in stores if [v.type for v in op.values] == [Float32Type()]]
    loads = [op for op in module.walk() if isinstance(op, hopper.GlobalLoadOp)]
    sums = [op for op in module.walk() if isinstance(op, arith.AddfOp)]
    assert partials and loads and sums
    assert all(load.values[0].type == Float32Type() for load in loads)
    # What stays ptx is the arrival counter: its atomic and the broadcast of the old count.
    float_registers = [value for value in registers(module) if ptx.kind_of(value).name == "f32"]
    assert not float_registers
