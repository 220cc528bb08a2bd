"""The structure of an IR module as a hashable value: what its printed IR says, unprinted.

The in-memory compile cache (mmcomp.cache) keys a fusion on `StructureKey`: two modules
have equal keys exactly when their printed IR is the same text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.ir import Operation, SSAValue


class StructureKey:
    """A module's structure (`structure_of`) with its hash computed once, from its skeleton:
    the op names, operand numbers and value names, which equal structures share (hashing
    the xDSL attributes as well would cost as much as reading the IR)."""

    __slots__ = ("_hash", "parts")

    def __init__(self, parts: tuple[object, ...], skeleton: tuple[object, ...]):
        self.parts = parts
        """Each op's name, operands, result types and names, properties, attributes and
        regions, in order (see `structure_of`)."""
        self._hash = hash(skeleton)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, StructureKey):
            return NotImplemented
        return self._hash == other._hash and self.parts == other.parts

    def __repr__(self) -> str:
        return f"StructureKey({len(self.parts)} parts, hash {self._hash:#x})"


def _append_op(
    op: Operation, numbers: dict[SSAValue, int], parts: list[object], skeleton: list[object]
) -> None:
    """Append the structure of `op` and the ops nested in it to `parts` (and the names and
    operand numbers to `skeleton`), numbering the values it defines (an operand defined
    outside the module is -1)."""
    results = op.results
    for result in results:
        numbers[result] = len(numbers)
    operands = tuple(numbers.get(operand, -1) for operand in op.operands)
    names = tuple(result.name_hint for result in results)
    properties = op.properties
    attributes = op.attributes
    regions = op.regions
    skeleton.append((op.name, operands, names))
    parts.append(
        (
            op.name,
            operands,
            tuple(result.type for result in results),
            names,
            tuple(sorted(properties.items())) if properties else (),
            tuple(sorted(attributes.items())) if attributes else (),
            len(regions),
        )
    )
    for region in regions:
        parts.append(len(region.blocks))
        for block in region.blocks:
            args = block.args
            parts.append(tuple((arg.type, arg.name_hint) for arg in args))
            skeleton.append(tuple(arg.name_hint for arg in args))
            for arg in args:
                numbers[arg] = len(numbers)
            for nested in block.ops:
                _append_op(nested, numbers, parts, skeleton)


def structure_of(op: Operation) -> StructureKey:
    """The IR of `op` as a hashable key, equal for two ops exactly when their printed IR is:
    each op's name, operands (by definition order), result types and name hints,
    properties and attributes (xDSL attributes compare by value; floats by their bits),
    its regions' blocks and their arguments' types and names, in order."""
    parts: list[object] = []
    skeleton: list[object] = []
    _append_op(op, {}, parts, skeleton)
    return StructureKey(tuple(parts), tuple(skeleton))
