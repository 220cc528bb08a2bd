"""A numerical model of an emitted kernel on the CPU: the ring model (ptx_ring_model) with
every thread of the CTA, and the data: TMA loads, wgmma and the epilogue's arithmetic.

`run_values(ptx, plan, inputs)` interprets the PTX entry for every CTA of the launch, with
all its threads, and returns the outputs. On top of the ring model's control flow,
barriers and integer arithmetic it computes:

- TMA tile loads (`cp.async.bulk.tensor`): the box of the tensor map's view at the
  coordinates, zero past the view's extents, each 128-byte row written with the 128-byte
  swizzle (`mmcomp.arch.smem_layout.swizzle_address`);
- `wgmma.mma_async` m64nNk16 with bf16 or f16 operands: each thread's fragment of D (rows
  16 w + l / 4 (+ 8), columns 8 j + 2 (l % 4) (+ 1)), A and B read from shared memory
  through their descriptors as the hardware reads them (K-major: element (r, k) at start +
  (r / 8) SBO + (r % 8) 128 + 2 k; MN-major: start + (mn / 64) LBO + (k / 8) SBO +
  (k % 8) 128 + 2 (mn % 64); then swizzled), the transpose bits choosing the major;
- f32 arithmetic (add, sub, mul, div, fma, max, min, neg, abs, ex2/rcp/tanh approximated
  by their exact functions), comparisons and selects of f32 (`setp.<cmp>.f32`,
  `selp.f32`), conversions to and from bf16 / f16 (round to nearest even, and packed
  pairs) and to fp8 pairs (`cvt.rn.satfinite.e4m3x2.f32`: clipped to the largest finite,
  then rounded), and global loads and stores of 16-bit and f32 elements (vectors too),
  an f32 register's bits where it carries words of a 16-bit array, and of fp8 pairs
  (`st.global.b16`);
- `shfl.sync.bfly.b32`: each lane waits until every lane of its warp has reached its
  k-th shuffle, then reads lane `lane ^ mask`'s value;
- the int32 arrays of a grouped kernel (its offsets or counts), read by `ld.global.u32`;
- the staged epilogue boxes without TMA stores: `stmatrix.m8n8.x4` (warp-collective: done
  when the warp's 32 lanes have issued it, each lane's address naming one matrix row),
  `st.shared` and `ld.shared` of f32 words, on the bytes of shared memory.

- TMA tile stores (`cp.async.bulk.tensor...global.shared`): the swizzled box in shared
  memory written to the tensor map's view at the coordinates, clipped at its extents,
  when the storing thread issues it.

Floating-point registers hold numpy float32 values, 16-bit ones their bits. It checks the
lowering's arithmetic and addressing (which elements a thread computes and where it stores
them), not the hardware: the approximations and the order of a wgmma's sums are exact
here, and a TMA store reads its box when issued (the model cannot tell a missing wait for
the store's reads). Only kernels without clusters (CTAs one after another) are modelled; a
staged operand (rows not 16-byte multiples) is read as its elements, which its padded copy
holds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np
from ptx_ring_model import PARAM_BASE, Model, RingError, Thread, parse

from mmcomp.arch.smem_layout import SwizzleMode, swizzle_address

SHARED_BYTES = 240 * 1024
"""Bytes of the modelled shared memory (the ring, barriers and slack of any kernel)."""
_FLOAT_TYPES = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}
_FP8_TYPES = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
"""wgmma's 8-bit operand types (PTX spelling) and their numpy types."""
_FLOAT_COMPARE = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b and not (np.isnan(a) or np.isnan(b)),
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "neu": lambda a, b: a != b,
    "equ": lambda a, b: a == b or np.isnan(a) or np.isnan(b),
    "num": lambda a, b: not (np.isnan(a) or np.isnan(b)),
    "nan": lambda a, b: bool(np.isnan(a) or np.isnan(b)),
}
"""The f32 comparisons of `setp` (ordered ones fail on NaN, `neu` / `equ` hold on it)."""


def _fp8_bits(value: np.float32, dtype: str) -> int:
    """An f32 value rounded to the fp8 type with saturation (NaN kept), as bits."""
    fp8 = _FP8_TYPES[dtype]
    largest = float(ml_dtypes.finfo(fp8).max)
    clipped = np.clip(np.float32(value), -largest, largest)
    return int(np.asarray(clipped, np.float32).astype(fp8).view(np.uint8))


def _f32(value: float) -> np.float32:
    return np.float32(value)


def _to_bits(value: np.float32, dtype: str) -> int:
    return int(np.asarray(value, dtype=np.float32).astype(_FLOAT_TYPES[dtype]).view(np.uint16))


def _from_bits(bits: int, dtype: str) -> np.float32:
    return np.float32(np.asarray(bits & 0xFFFF, dtype=np.uint16).view(_FLOAT_TYPES[dtype]))


@dataclass
class Array:
    """A kernel argument's data: its elements, flat, as the kernel addresses them."""

    base: int
    data: np.ndarray
    """uint16 bits of a 16-bit array, uint8 bits of an fp8 one, float32 values of an f32
    one, uint32 values of an int32 one, flat."""
    dtype: str
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        """Bytes per element."""
        return {"f32": 4, "i32": 4, "fp8": 1}.get(self.dtype, 2)

    def index(self, address: int) -> int | None:
        """The element at `address`, or None outside the array."""
        offset = address - self.base
        if offset < 0 or offset >= self.data.size * self.size:
            return None
        if offset % self.size:
            raise RingError(f"misaligned access at {address:#x}")
        return offset // self.size


@dataclass
class ValueModel(Model):
    """The ring model with data (see the module docstring)."""

    arrays: list[Array] = field(default_factory=list[Array])
    maps: list[Any] = field(default_factory=list[Any])
    """The plan's tensor maps (`ptx.TensorMap`), by parameter."""
    shared_bytes: np.ndarray = field(default_factory=lambda: np.zeros(SHARED_BYTES, np.uint8))
    extent_values: list[int] = field(default_factory=list[int])
    """The runtime extents the kernel takes after its arrays (M, batch), in order."""

    def thread_ids(self) -> list[int]:
        """Every thread of the CTA is modelled (each computes its own data)."""
        return list(range(self.program.threads))

    def barrier_arrivals(self, count: int) -> int:
        """Every thread is modelled: a named barrier counts all `count` of them."""
        return count

    def value(self, thread: Thread, cta: Any, operand: str) -> Any:
        """Registers as they are held; f32 immediates as float32."""
        if operand.startswith("0f"):
            return np.asarray(int(operand[2:], 16), dtype=np.uint32).view(np.float32)[()]
        if operand.startswith("%rs"):
            return thread.regs.get(operand, 0)
        return super().value(thread, cta, operand)

    def array_at(self, address: int) -> tuple[Array, int] | None:
        """The array and element at a global address."""
        for array in self.arrays:
            index = array.index(address)
            if index is not None:
                return array, index
        return None

    def step(self, thread: Thread, cta: Any, reps: int) -> bool:
        """The data instructions here; control flow, barriers and integers as the ring model."""
        guard, negated, opcode, ops = self.program.code[thread.pc]
        if guard is not None and bool(thread.regs.get(guard, 0)) == negated:
            thread.pc += 1
            return True
        parts = opcode.split(".")
        head = parts[0]
        if opcode.startswith("ld.param") and parts[-1] == "u32":
            index = int(ops[1].strip("[]").removeprefix("arg")) - len(self.arrays)
            self.set(thread, ops[0], self.extent_values[index])
            thread.pc += 1
            return True
        if opcode.startswith("cp.async.bulk.tensor") and ".global.mbarrier" in opcode:
            self.tma_load(thread, cta, ops)
            return super().step(thread, cta, reps)
        if opcode.startswith("cp.async.bulk.tensor") and ".global.shared" in opcode:
            self.tma_store(thread, cta, ops)
            thread.pc += 1
            return True
        if head == "shfl":
            return self.shuffle(thread, cta, parts, ops)
        if head == "wgmma" and parts[1] == "mma_async":
            self.wgmma(thread, cta, opcode, ops)
        elif not self.data(thread, cta, head, parts, ops):
            return super().step(thread, cta, reps)
        thread.pc += 1
        return True

    def shuffle(self, thread: Thread, cta: Any, parts: list[str], ops: list[str]) -> bool:
        """`shfl.sync.bfly.b32 d, a, mask, 31, 0xffffffff`: blocked until every lane of the
        warp has posted its value for this (its k-th) shuffle; then lane ^ mask's value."""
        if parts[:3] != ["shfl", "sync", "bfly"]:
            raise RingError(f"no model of {'.'.join(parts)}")
        lane, warp = thread.tid % 32, thread.tid // 32
        count = thread.__dict__.get("shuffles", 0)
        posted = cta.__dict__.setdefault("shuffles", {}).setdefault((warp, count), {})
        if lane not in posted:
            posted[lane] = self.value(thread, cta, ops[1])
        if len(posted) < 32:
            return False
        thread.regs[ops[0]] = posted[lane ^ int(ops[2])]
        thread.__dict__["shuffles"] = count + 1
        thread.pc += 1
        return True

    def data(self, thread: Thread, cta: Any, head: str, parts: list[str], ops: list[str]) -> bool:
        """A global load or store of array data, a staged box's shared-memory access, or
        float arithmetic; False otherwise."""
        opcode = ".".join(parts)
        if head in ("ld", "st") and ".global" in opcode:
            return self.global_data(thread, cta, head, parts, ops)
        if head in ("ld", "st") and ".shared" in opcode and parts[-1] == "f32":
            self.shared_words(thread, cta, head, ops)
            return True
        if head == "stmatrix":
            self.stmatrix(thread, cta, parts, ops)
            return True
        return self.float_data(thread, cta, head, parts, ops)

    def shared_words(self, thread: Thread, cta: Any, head: str, ops: list[str]) -> None:
        """`ld.shared` / `st.shared` of f32 registers: their bits at the address."""
        address = self.address(thread, cta, ops[1] if head == "ld" else ops[0])
        regs = [r.strip() for r in (ops[0] if head == "ld" else ops[1]).strip("{}").split(",")]
        for position, reg in enumerate(regs):
            at = address + 4 * position
            if head == "ld":
                word = self.shared_bytes[at : at + 4].copy()
                thread.regs[reg] = word.view(np.float32)[0]
                continue
            value = np.asarray(self.value(thread, cta, reg), np.float32).reshape(1)
            self.shared_bytes[at : at + 4] = value.view(np.uint8)

    def stmatrix(self, thread: Thread, cta: Any, parts: list[str], ops: list[str]) -> None:
        """`stmatrix.sync.aligned.m8n8.x4.shared.b16`, warp-collective: each lane's row
        address and registers are kept until the warp's 32 lanes have issued their n-th
        one; then row r of matrix i goes to lane 8 i + r's address, its columns 2 j and
        2 j + 1 from register i of lane 4 r + j."""
        if "x4" not in parts or "trans" in parts:
            raise RingError(f"no model of {'.'.join(parts)}")
        warp = thread.tid // 32
        issued = thread.__dict__.setdefault("stmatrices", 0)
        thread.__dict__["stmatrices"] = issued + 1
        pending = cta.__dict__.setdefault("stmatrix", {}).setdefault((warp, issued), {})
        regs = [r.strip() for r in ops[1].strip("{}").split(",")]
        words = [int(self.value(thread, cta, reg)) & 0xFFFFFFFF for reg in regs]
        pending[thread.tid % 32] = (self.address(thread, cta, ops[0]), words)
        if len(pending) < 32:
            return
        for lane, (_, lane_words) in pending.items():
            row, pair = divmod(lane, 4)
            for matrix, word in enumerate(lane_words):
                at = pending[8 * matrix + row][0] + 4 * pair
                self.shared_bytes[at : at + 4] = np.asarray([word], np.uint32).view(np.uint8)
        del cta.__dict__["stmatrix"][(warp, issued)]

    def global_data(
        self, thread: Thread, cta: Any, head: str, parts: list[str], ops: list[str]
    ) -> bool:
        """A global load or store of array data; False for the ring model's counters."""
        address = self.address(thread, cta, ops[1] if head == "ld" else ops[0])
        found = self.array_at(address)
        if found is None:
            if parts[-1] in ("u32", "s32") or (parts[-1] == "b32" and "v2" not in parts):
                return False
            raise RingError(f"{head} outside every array at {address:#x}: {parts}")
        array, index = found
        regs = [r.strip() for r in (ops[0] if head == "ld" else ops[1]).strip("{}").split(",")]
        if array.dtype == "i32":
            if head != "ld" or len(regs) != 1:
                raise RingError(f"{head} of an int32 array: {parts}")
            self.set(thread, regs[0], int(array.data[index]))
            return True
        width = 4 if parts[-1] in ("b32", "f32", "u32", "s32") else 2
        elements: list[tuple[str, int]] = []
        for position, reg in enumerate(regs):
            if width == 4 and array.size == 2:
                # A packed pair of 16-bit elements in a b32 register.
                elements.append((reg, 2 * position))
            else:
                elements.append((reg, position))
        for reg, offset in elements:
            at = index + offset
            if width == 2 and array.size == 1:
                # A pair of fp8 elements in a 16-bit register (element 0 in the low byte).
                if head == "ld":
                    raise RingError("no model of fp8 loads in the epilogue")
                bits = int(self.value(thread, cta, reg))
                array.data[at], array.data[at + 1] = bits & 0xFF, bits >> 8 & 0xFF
                continue
            if width == 4 and array.size == 2:
                if head == "ld":
                    lo, hi = int(array.data[at]), int(array.data[at + 1])
                    self.set(thread, reg, lo | hi << 16)
                else:
                    raw = self.value(thread, cta, reg)
                    if isinstance(raw, np.floating):  # an f32 register carrying two words
                        raw = np.asarray(raw, np.float32).reshape(1).view(np.uint32)[0]
                    bits = int(raw)
                    array.data[at], array.data[at + 1] = bits & 0xFFFF, bits >> 16 & 0xFFFF
                continue
            if head == "ld":
                thread.regs[reg] = array.data[at] if array.dtype == "f32" else int(array.data[at])
            else:
                value = self.value(thread, cta, reg)
                array.data[at] = value if array.dtype == "f32" else int(value) & 0xFFFF
        return True

    def float_data(
        self, thread: Thread, cta: Any, head: str, parts: list[str], ops: list[str]
    ) -> bool:
        """f32 arithmetic and the conversions of floats; False for anything else."""
        v = lambda operand: self.value(thread, cta, operand)  # noqa: E731
        kind = parts[-1]
        if head == "cvt" and len(parts) >= 3:
            to, frm = parts[-2], parts[-1]
            if to in ("bf16", "f16") and frm == "f32":
                thread.regs[ops[0]] = _to_bits(v(ops[1]), to)
                return True
            if to == "f32" and frm in ("bf16", "f16"):
                thread.regs[ops[0]] = _from_bits(int(v(ops[1])), frm)
                return True
            if to in ("e4m3x2", "e5m2x2") and frm == "f32" and "satfinite" in parts:
                dtype = to[:-2]
                hi, lo = _fp8_bits(v(ops[1]), dtype), _fp8_bits(v(ops[2]), dtype)
                self.set(thread, ops[0], hi << 8 | lo)
                return True
            if to in ("bf16x2", "f16x2") and frm == "f32":
                dtype = to[:-2]
                hi, lo = _to_bits(v(ops[1]), dtype), _to_bits(v(ops[2]), dtype)
                self.set(thread, ops[0], hi << 16 | lo)
                return True
            if "f32" in (to, frm) or to in ("bf16", "f16") or frm in ("bf16", "f16"):
                raise RingError(f"no model of cvt {'.'.join(parts)}")
            return False
        if head == "mov" and kind == "b32" and ops[0].startswith("%f"):
            # An assign into an f32 register (a value carried in place): the value itself.
            thread.regs[ops[0]] = _f32(v(ops[1]))
            return True
        if kind != "f32":
            return False
        if head == "setp":
            compare = _FLOAT_COMPARE[parts[1]]
            thread.regs[ops[0]] = int(bool(compare(v(ops[1]), v(ops[2]))))
            return True
        if head == "selp":
            thread.regs[ops[0]] = _f32(v(ops[1]) if v(ops[3]) else v(ops[2]))
            return True
        args = [v(o) for o in ops[1:]]
        with np.errstate(all="ignore"):
            if head == "mov":
                result = _f32(args[0])
            elif head == "add":
                result = _f32(args[0] + args[1])
            elif head == "sub":
                result = _f32(args[0] - args[1])
            elif head == "mul":
                result = _f32(args[0] * args[1])
            elif head == "fma":
                result = _f32(float(args[0]) * float(args[1]) + float(args[2]))
            elif head == "div":
                result = _f32(args[0] / args[1])
            elif head == "max":  # the other operand of a NaN, as max.f32
                result = _f32(np.fmax(args[0], args[1]))
            elif head == "min":
                result = _f32(np.fmin(args[0], args[1]))
            elif head == "neg":
                result = _f32(-args[0])
            elif head == "abs":
                result = _f32(abs(args[0]))
            elif head == "ex2":
                result = _f32(np.exp2(np.float32(args[0])))
            elif head == "rcp":
                result = _f32(np.float32(1.0) / np.float32(args[0]))
            elif head == "tanh":
                result = _f32(np.tanh(np.float32(args[0])))
            else:
                raise RingError(f"no model of {'.'.join(parts)}")
        thread.regs[ops[0]] = result
        return True

    def tma_load(self, thread: Thread, cta: Any, ops: list[str]) -> None:
        """Write the box at the coordinates into shared memory (swizzled, zero past the
        view's extents)."""
        index = self.map_index(thread, cta, ops[1])
        tmap = self.maps[index]
        coords_text = ops[1].split("{")[1].split("}")[0]
        coords = [int(self.value(thread, cta, c.strip())) for c in coords_text.split(",")]
        coords = [c - (1 << 32) if c & (1 << 31) else c for c in coords]
        dst = self.address(thread, cta, ops[0])
        array = next(a for a in self.arrays if a.base == (tmap.arg + 1) * PARAM_BASE)
        # A staged operand (rows not 16-byte multiples: `tmap.pitch`) is read by TMA from a
        # padded copy of the same elements; the model reads the elements themselves.
        compact = [int(np.prod(array.shape[axis + 1 :])) for axis in range(len(array.shape))]
        extents = [array.shape[axis] if axis >= 0 else 1 for axis in tmap.axes]
        strides = [compact[axis] if axis >= 0 else 0 for axis in tmap.axes]
        box = list(tmap.box)
        origin = list(reversed(coords))  # outermost first
        rows = int(np.prod(box[:-1])) if len(box) > 1 else 1
        inner = box[-1]
        size = array.size
        for row in range(rows):
            position: list[int] = []
            rest = row
            for extent in reversed(box[:-1]):
                position.insert(0, rest % extent)
                rest //= extent
            at = [o + p for o, p in zip(origin[:-1], position, strict=True)]
            inside = all(0 <= a < e for a, e in zip(at, extents[:-1], strict=True))
            for column in range(inner):
                c = origin[-1] + column
                bits = 0
                if inside and 0 <= c < extents[-1]:
                    offset = sum(a * s for a, s in zip(at, strides[:-1], strict=True))
                    bits = int(array.data[offset + c * strides[-1]])
                linear = dst + (row * inner + column) * size
                address = swizzle_address(linear - linear % 2, SwizzleMode.B128) + linear % 2
                self.shared_bytes[address] = bits & 0xFF
                if size == 2:
                    self.shared_bytes[address + 1] = bits >> 8

    def tma_store(self, thread: Thread, cta: Any, ops: list[str]) -> None:
        """Write the box in shared memory (swizzled) to the tensor map's view at the
        coordinates, its elements past the view's extents left out (read at issue: the
        model runs no copy alongside the threads)."""
        tmap = self.maps[self.map_index(thread, cta, ops[0])]
        coords_text = ops[0].split("{")[1].split("}")[0]
        coords = [int(self.value(thread, cta, c.strip())) for c in coords_text.split(",")]
        coords = [c - (1 << 32) if c & (1 << 31) else c for c in coords]
        src = self.address(thread, cta, ops[1])
        array = next(a for a in self.arrays if a.base == (tmap.arg + 1) * PARAM_BASE)
        compact = [int(np.prod(array.shape[axis + 1 :])) for axis in range(len(array.shape))]
        axes = tmap.axes or tuple(range(len(array.shape)))  # a store's view: the array's axes
        extents = [array.shape[axis] if axis >= 0 else 1 for axis in axes]
        strides = [compact[axis] if axis >= 0 else 0 for axis in axes]
        box = list(tmap.box)
        origin = list(reversed(coords))  # outermost first
        rows = int(np.prod(box[:-1])) if len(box) > 1 else 1
        inner = box[-1]
        size = array.size
        for row in range(rows):
            position: list[int] = []
            rest = row
            for extent in reversed(box[:-1]):
                position.insert(0, rest % extent)
                rest //= extent
            at = [o + p for o, p in zip(origin[:-1], position, strict=True)]
            if not all(0 <= a < e for a, e in zip(at, extents[:-1], strict=True)):
                continue
            offset = sum(a * s for a, s in zip(at, strides[:-1], strict=True))
            for column in range(inner):
                c = origin[-1] + column
                if not 0 <= c < extents[-1]:
                    continue
                linear = src + (row * inner + column) * size
                address = swizzle_address(linear - linear % 16, SwizzleMode.B128) + linear % 16
                raw = self.shared_bytes[address : address + size].tobytes()
                element = offset + c * strides[-1]
                if array.dtype == "f32":
                    array.data[element] = np.frombuffer(raw, np.float32)[0]
                else:
                    array.data[element] = np.frombuffer(raw, np.uint16)[0]

    def operand(self, descriptor: int, rows: int, k_major: bool, dtype: str) -> np.ndarray:
        """The rows x k operand a descriptor names, as the hardware reads it: k 16 of 16-bit
        elements, 32 of fp8 ones (K-major only)."""
        if dtype in _FP8_TYPES:
            return self.fp8_operand(descriptor, rows, dtype)
        start = (descriptor & 0x3FFF) << 4
        lbo = ((descriptor >> 16) & 0x3FFF) << 4
        sbo = ((descriptor >> 32) & 0x3FFF) << 4
        if descriptor >> 62 != SwizzleMode.B128.descriptor_code:
            raise RingError("only 128-byte swizzled operands are modelled")
        out = np.zeros((rows, 16), dtype=np.float32)
        for r in range(rows):
            for k in range(16):
                if k_major:
                    linear = start + (r // 8) * sbo + (r % 8) * 128 + 2 * k
                else:
                    linear = start + (r // 64) * lbo + (k // 8) * sbo + (k % 8) * 128
                    linear += 2 * (r % 64)
                address = swizzle_address(linear, SwizzleMode.B128)
                bits = int(self.shared_bytes[address]) | int(self.shared_bytes[address + 1]) << 8
                out[r, k] = _from_bits(bits, dtype)
        return out

    def fp8_operand(self, descriptor: int, rows: int, dtype: str) -> np.ndarray:
        """The rows x 32 K-major fp8 operand a descriptor names (element (r, k) at start +
        (r / 8) SBO + (r % 8) 128 + k, swizzled)."""
        start = (descriptor & 0x3FFF) << 4
        sbo = ((descriptor >> 32) & 0x3FFF) << 4
        if descriptor >> 62 != SwizzleMode.B128.descriptor_code:
            raise RingError("only 128-byte swizzled operands are modelled")
        raw = np.zeros((rows, 32), dtype=np.uint8)
        for r in range(rows):
            for k in range(32):
                linear = start + (r // 8) * sbo + (r % 8) * 128 + k
                address = swizzle_address(linear - linear % 2, SwizzleMode.B128) + linear % 2
                raw[r, k] = self.shared_bytes[address]
        return raw.view(_FP8_TYPES[dtype]).astype(np.float32)

    def wgmma(self, thread: Thread, cta: Any, opcode: str, ops: list[str]) -> None:
        """This thread's fragment of D = A B (+ D)."""
        shape = re.search(r"m64n(\d+)k16\.f32\.(bf16|f16)", opcode)
        fp8 = re.search(r"m64n(\d+)k32\.f32\.(e4m3|e5m2)\.(e4m3|e5m2)", opcode)
        if shape is None and fp8 is None:
            raise RingError(f"no model of {opcode}")
        if fp8 is not None:
            n, dtype, b_dtype = int(fp8.group(1)), fp8.group(2), fp8.group(3)
        else:
            assert shape is not None
            n, dtype = int(shape.group(1)), shape.group(2)
            b_dtype = dtype
        regs = [r.strip() for r in ops[0].strip("{}").split(",")]
        desc_a, desc_b = (int(self.value(thread, cta, o)) for o in ops[1:3])
        accumulate = bool(self.value(thread, cta, ops[3]))
        # 8-bit operands have no transpose bits: both are K-major.
        trans_a, trans_b = (0, 0) if fp8 is not None else (int(ops[6]), int(ops[7]))
        # wgmma is warpgroup-collective: the first thread of the warpgroup to issue its
        # i-th wgmma computes the product for all of them, from shared memory as it is then.
        group = thread.tid // 128
        products = cta.__dict__.setdefault("products", {}).setdefault(group, [])
        issued = thread.__dict__.setdefault("wgmmas", 0)
        thread.__dict__["wgmmas"] = issued + 1
        if issued == len(products):
            a = self.operand(desc_a, 64, trans_a == 0, dtype)
            b = self.operand(desc_b, n, trans_b == 0, b_dtype)
            products.append((a.astype(np.float64) @ b.astype(np.float64).T).astype(np.float32))
        product = products[issued]
        lane, warp = thread.tid % 32, (thread.tid % 128) // 32
        for j, reg in enumerate(regs):
            row = 16 * warp + lane // 4 + 8 * ((j // 2) % 2)
            col = 8 * (j // 4) + 2 * (lane % 4) + j % 2
            before = thread.regs.get(reg, np.float32(0)) if accumulate else np.float32(0)
            thread.regs[reg] = np.float32(before + product[row, col])


def run_values(
    ptx: str,
    plan: Any,
    inputs: Sequence[np.ndarray],
    outputs: Sequence[np.ndarray],
    extents: Sequence[int] = (),
    grid: int | None = None,
) -> list[np.ndarray]:
    """Run every CTA of the launch on `inputs`, writing into copies of `outputs` (their
    initial contents, e.g. NaN poison), and return the copies. A kernel with runtime
    extents takes them in `extents` (in the plan's order) and runs on `grid` CTAs (its
    persistent loop strides by the grid, so any grid covers the tiles)."""
    if plan.cluster != 1:
        raise ValueError("the value model runs CTAs one after another: no clusters")
    if plan.extents and (grid is None or len(extents) != len(plan.extents)):
        raise ValueError(f"a kernel with runtime extents {plan.extents} needs them and a grid")
    if any(
        -1 in spec.shape or min(spec.shape) < 0
        for spec in plan.arrays[len(inputs) + len(outputs) :]
    ):
        raise ValueError("workspaces of a runtime extent are not modelled")
    model = ValueModel(
        parse(ptx),
        [m.box_bytes for m in plan.tensor_maps],
        grid or plan.grid,
        maps=plan.tensor_maps,
        extent_values=list(extents),
    )
    results: list[np.ndarray] = []
    hosts = [np.ascontiguousarray(a) for a in [*inputs, *outputs]]
    for spec in plan.arrays[len(hosts) :]:
        if spec.dtype == "f32":  # a split-K workspace (the counters are the ring model's)
            hosts.append(np.zeros(spec.shape, np.float32))
    for index, host in enumerate(hosts):
        dtype = "f32" if host.dtype == np.float32 else str(host.dtype).replace("bfloat16", "bf16")
        flat = host.reshape(-1)
        data = flat.copy() if dtype == "f32" else flat.view(np.uint16).copy()
        if host.dtype.itemsize == 1:  # fp8: read by TMA only, as bytes
            dtype, data = "fp8", flat.view(np.uint8).copy()
        if host.dtype == np.int32:  # a grouped kernel's offsets or counts
            dtype, data = "i32", flat.view(np.uint32).copy()
        model.arrays.append(Array((index + 1) * PARAM_BASE, data, dtype, tuple(host.shape)))
        if len(inputs) <= index < len(inputs) + len(outputs):
            results.append(host)
    for ctaid in range(model.grid):
        model.run_cta(ctaid)
    final: list[np.ndarray] = []
    written = model.arrays[len(inputs) : len(inputs) + len(outputs)]
    for array, like in zip(written, results, strict=True):
        data = array.data if array.dtype == "f32" else array.data.view(like.dtype)
        final.append(data.reshape(like.shape))
    return final
