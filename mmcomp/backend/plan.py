"""The launch plan of a lowered kernel, read from its `ptx.entry`.

Everything a launch needs is in the ptx-level IR (mmcomp.dialects.ptx.launch): each
parameter's array or tensor map, the grid, the cluster and the dynamic shared memory. So
the cuda back end reads its plan from the final module, and a ptx-level file that
`mmcomp-opt` wrote launches from Python like a kernel `mmcomp.compile` built
(`mmcomp.backend.load_kernel`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from mmcomp.dialects import ptx
from mmcomp.errors import LaunchError


@dataclass(frozen=True)
class LaunchPlan:
    """What the back end needs to launch a lowered kernel."""

    entry: str
    """The kernel's name."""
    arrays: tuple[ptx.KernelArray, ...]
    """The pointer parameters' arrays, in order (inputs, outputs, workspaces)."""
    tensor_maps: tuple[ptx.TensorMap, ...]
    """The tensor maps, passed after the pointers."""
    grid: int
    """CTAs in the grid."""
    threads: int
    """Threads per CTA."""
    smem_bytes: int
    """Dynamic shared memory per CTA (including the alignment slack)."""
    cluster: int = 1
    """CTAs per cluster (the grid is a multiple)."""
    persistent: bool = False
    """The CTAs loop over work units, so the grid may be cut to the CTAs that fit at once."""
    extents: tuple[str, ...] = ()
    """The runtime extents the kernel takes (u32 parameters after the pointers)."""
    grid_function: str = ""
    """With runtime extents: the launch function giving the grid (see `specialized`)."""
    extent_values: tuple[int, ...] = ()
    """A plan specialized for runtime extents: their values, in `extents` order."""
    programmatic: bool = False
    """The kernel waits for the previous grid itself (`griddepcontrol.wait` before any
    global access), so it is launched with a programmatic dependency on it: its prologue
    may run while that grid finishes."""

    @property
    def dynamic(self) -> bool:
        """Whether the plan still has extents known only at launch (see `specialized`)."""
        return bool(self.extents) and not self.extent_values

    def specialized(self, values: dict[str, int], grid: int) -> LaunchPlan:
        """The plan at these runtime extents (m, b0, ... and cta_tiles): concrete array
        shapes, each tensor map over its array's shape, the grid given."""
        arrays = tuple(array.specialized(values) for array in self.arrays)
        maps = tuple(
            spec.specialized(arrays[spec.arg].shape) if spec.dynamic else spec
            for spec in self.tensor_maps
        )
        return dataclasses.replace(
            self,
            arrays=arrays,
            tensor_maps=maps,
            grid=grid,
            extent_values=tuple(values[name] for name in self.extents),
        )

    @property
    def arguments(self) -> tuple[str, ...]:
        """Kernel argument names in order, passed as pointers."""
        return tuple(array.name for array in self.arrays)

    @property
    def argument_types(self) -> tuple[tuple[tuple[int, ...], str], ...]:
        """(shape, dtype) of each argument."""
        return tuple((array.shape, array.dtype) for array in self.arrays)

    def count(self, role: str) -> int:
        """Arguments of a role: input, output or workspace."""
        return sum(array.role == role for array in self.arrays)


def entry_of(module: Operation) -> ptx.EntryOp:
    """The one `ptx.entry` of a ptx-level module (or of the ptx.module inside it)."""
    entries = [op for op in module.walk() if isinstance(op, ptx.EntryOp)]
    if len(entries) != 1:
        raise LaunchError(
            f"cuda back end: expected a ptx-level module with one ptx.entry (the output of "
            f"compile-to-ptx), found {len(entries)} entries"
        )
    return entries[0]


def launch_plan(module: ModuleOp | ptx.PtxModuleOp) -> LaunchPlan:
    """The launch plan the entry of a ptx-level module carries; LaunchError naming what
    is missing where the IR was not written by lower-schedule-to-hopper."""
    entry = entry_of(module)
    where = f"ptx.entry @{entry.sym_name.data}"
    if entry.launch is None:
        raise LaunchError(
            f"{where}: no launch data (grid, cluster, shared memory); it is written by "
            "lower-schedule-to-hopper"
        )
    if entry.reqntid is None:
        raise LaunchError(f"{where}: no reqntid, so the block size is unknown")
    arrays: list[ptx.KernelArray] = []
    extents: list[str] = []
    maps: list[ptx.TensorMap] = []
    for param in entry.params.data:
        info = param.info
        name = param.param_name.data
        if isinstance(info, ptx.KernelArrayAttr):
            if maps or extents:
                raise LaunchError(
                    f"{where}: pointer parameter '{name}' after a runtime extent or tensor map"
                )
            arrays.append(info.data)
        elif isinstance(info, ptx.KernelExtentAttr):
            if maps:
                raise LaunchError(f"{where}: runtime extent '{name}' after a tensor map")
            extents.append(info.data.name)
        elif isinstance(info, ptx.TensorMapAttr):
            maps.append(info.data)
        else:
            raise LaunchError(
                f"{where}: parameter '{name}' says nothing of what to pass (a #ptx.array, "
                "#ptx.extent or #ptx.tensor_map)"
            )
    for spec in maps:
        if not 0 <= spec.arg < len(arrays):
            raise LaunchError(f"{where}: a tensor map views argument {spec.arg}, which is absent")
    launch = entry.launch.data
    if bool(extents) != bool(launch.grid_function):
        raise LaunchError(
            f"{where}: a kernel takes runtime extents exactly when its launch names a "
            f"grid_function (extents: {list(extents)}, grid_function: "
            f"{launch.grid_function or 'none'})"
        )
    threads = 1
    for dim in entry.reqntid.data:
        threads *= dim.data
    programmatic = any(isinstance(op, ptx.GridDepWaitOp) for op in entry.walk())
    return LaunchPlan(
        entry.sym_name.data,
        tuple(arrays),
        tuple(maps),
        launch.grid,
        threads,
        launch.smem,
        launch.cluster,
        launch.persistent,
        tuple(extents),
        launch.grid_function,
        programmatic=programmatic,
    )
