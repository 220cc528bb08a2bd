"""A model of one CTA of an emitted kernel: its control flow and its mbarrier ring, on the CPU.

`run_grid(ptx, plan)` interprets the PTX entry with a few representative threads per
warpgroup (threads 0 and 1 of each), CTA after CTA: integer arithmetic, predicates and
branches exactly, mbarriers (arrival counts, transaction bytes, phases), named barriers,
shared memory and the split-K counters (atom / st.global / ld.global of u32) as the
hardware does; floating point, wgmma and data loads are not computed (a float register
holds 0). A TMA load completes its box's bytes on its barrier at once. A wait that can
never be satisfied shows as every thread blocked: `RingDeadlock`, naming each thread's
line and the barriers' states, where the GPU would hang. Bytes completed past a stage's
expected transaction count are a `RingError`.

The CTAs run one after another, which is a legal schedule for kernels whose CTAs do not
wait on each other (no clusters; split-K CTAs only count arrivals). Only such kernels are
modelled.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

MASK32 = (1 << 32) - 1
MASK64 = (1 << 64) - 1
PARAM_BASE = 1 << 36
"""Argument i's pointer is (i + 1) * PARAM_BASE."""

_INSTRUCTION = re.compile(r"^(?:@(!?)(%p\d+)\s+)?([\w.:]+)\s*(.*?);$")


class RingError(AssertionError):
    """The kernel broke the ring's protocol (more bytes than a stage expects, ...)."""


class RingDeadlock(RingError):
    """Every live thread waits for something that will never happen: a GPU hang."""


@dataclass
class Barrier:
    """An mbarrier: expected arrivals, those pending in this phase, transaction bytes."""

    expected: int
    pending: int
    tx: int = 0
    phase: int = 0
    completed: int = 0

    def check(self) -> None:
        """Complete the phase when every arrival and every byte is in."""
        if self.pending == 0 and self.tx == 0:
            self.phase ^= 1
            self.completed += 1
            self.pending = self.expected


@dataclass
class Thread:
    """One representative thread."""

    tid: int
    regs: dict[str, int] = field(default_factory=dict[str, int])
    pc: int = 0
    done: bool = False
    barrier_generation: int | None = None
    """The named-barrier generation this thread waits to pass (bar.sync), if any."""


@dataclass
class Cta:
    """The state shared by the threads of one CTA."""

    ctaid: int
    barriers: dict[int, Barrier] = field(default_factory=dict[int, Barrier])
    shared: dict[int, int] = field(default_factory=dict[int, int])
    named: dict[int, list[int]] = field(default_factory=dict[int, list[int]])
    """Named barrier id -> [arrived, generation]."""


@dataclass
class Program:
    """The parsed entry: instructions (guard, negated, opcode, operands) and labels."""

    code: list[tuple[str | None, bool, str, list[str]]]
    labels: dict[str, int]
    lines: list[str]
    threads: int


def parse(ptx: str) -> Program:
    """The entry body of `ptx` as a Program."""
    body = ptx[ptx.index("{", ptx.index(".entry")) + 1 : ptx.rindex("}")]
    threads_match = re.search(r"\.reqntid (\d+)", ptx)
    assert threads_match is not None
    code: list[tuple[str | None, bool, str, list[str]]] = []
    labels: dict[str, int] = {}
    lines: list[str] = []
    for raw in body.splitlines():
        line = raw.strip()
        if not line or line.startswith("//") or line.startswith(".reg"):
            continue
        if line.endswith(":"):
            labels[line[:-1]] = len(code)
            continue
        match = _INSTRUCTION.match(line)
        if match is None:
            raise RingError(f"cannot parse {line!r}")
        negated, guard, opcode, rest = match.groups()
        operands = [part.strip() for part in _split(rest)] if rest else []
        code.append((guard, negated == "!", opcode, operands))
        lines.append(line)
    return Program(code, labels, lines, int(threads_match.group(1)))


def _split(text: str) -> list[str]:
    """Operands separated by commas outside brackets and braces."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in text:
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


@dataclass
class Model:
    """Runs a Program CTA by CTA (see the module docstring)."""

    program: Program
    box_bytes: list[int]
    """Bytes one TMA load of tensor map j completes."""
    grid: int
    global_u32: dict[int, int] = field(default_factory=dict[int, int])
    quantum: int = 20000
    """Instructions a thread runs before the next one's turn (any order is legal: a large
    quantum lets one thread run far ahead, 1 interleaves them instruction by instruction)."""
    steps: int = 0
    tma_loads: int = 0
    jumps: Counter[str] = field(default_factory=Counter[str])
    """Branches taken by thread 0 of each CTA, by target label (`loop_1`: the persistent
    loop's iterations past the first)."""
    max_steps: int = 50_000_000

    def value(self, thread: Thread, cta: Cta, operand: str) -> int:
        """An operand's value: register, immediate, special register or symbol."""
        if operand.startswith("%p"):
            return thread.regs.get(operand, 0)
        if operand.startswith("%r") or operand.startswith("%f"):
            return thread.regs.get(operand, 0)
        specials = {"%tid.x": thread.tid, "%ctaid.x": cta.ctaid, "%nctaid.x": self.grid}
        if operand in specials:
            return specials[operand]
        if operand.startswith("0f") or operand.startswith("0d"):
            return 0
        if re.fullmatch(r"-?\d+", operand):
            return int(operand)
        if operand == "mmcomp_shared":
            return 0
        tmap = re.fullmatch(r"tmap(\d+)", operand)
        if tmap:
            return (1 << 60) + int(tmap.group(1))
        raise RingError(f"operand {operand!r}")

    def address(self, thread: Thread, cta: Cta, operand: str) -> int:
        """The address of a `[reg]` or `[reg+imm]` operand."""
        inner = operand.strip("[]")
        base, _, offset = inner.partition("+")
        return self.value(thread, cta, base.strip()) + (int(offset) if offset else 0)

    def run_cta(self, ctaid: int) -> Cta:
        """Run CTA `ctaid` to its end, or raise RingDeadlock / RingError."""
        cta = Cta(ctaid)
        threads = [Thread(tid) for tid in self.thread_ids()]
        while True:
            live = [t for t in threads if not t.done]
            if not live:
                return cta
            progress = False
            for thread in live:
                progress |= self.run_thread(thread, cta, len(threads))
            if not progress:
                raise RingDeadlock(self.describe(threads, cta))

    def describe(self, threads: list[Thread], cta: Cta) -> str:
        """Where every thread stands, and the barriers."""
        lines = [f"CTA {cta.ctaid}: every live thread is blocked"]
        for thread in threads:
            where = "done" if thread.done else self.program.lines[thread.pc]
            lines.append(f"  thread {thread.tid}: {where}")
        for addr, bar in sorted(cta.barriers.items()):
            lines.append(
                f"  mbarrier @{addr}: phase {bar.phase}, pending {bar.pending}/{bar.expected}, "
                f"tx {bar.tx}, completed {bar.completed}"
            )
        return "\n".join(lines)

    def run_thread(self, thread: Thread, cta: Cta, reps: int) -> bool:
        """Run `thread` until it blocks or ends; whether it moved."""
        moved = False
        for _ in range(self.quantum):
            if thread.done:
                return True
            if not self.step(thread, cta, reps):
                return moved
            moved = True
            self.steps += 1
            if self.steps > self.max_steps:
                raise RingError("step limit")
        return moved

    def set(self, thread: Thread, reg: str, value: int) -> None:
        """Write a register (masked to its width)."""
        thread.regs[reg] = value & (MASK64 if reg.startswith("%rd") else MASK32)

    def step(self, thread: Thread, cta: Cta, reps: int) -> bool:
        """Execute one instruction; False if the thread is blocked at it."""
        guard, negated, opcode, ops = self.program.code[thread.pc]
        if guard is not None and bool(thread.regs.get(guard, 0)) == negated:
            thread.pc += 1
            return True
        parts = opcode.split(".")
        head = parts[0]
        v = lambda operand: self.value(thread, cta, operand)  # noqa: E731
        next_pc = thread.pc + 1
        float_op = any(p in ("f32", "f16", "bf16", "f16x2", "bf16x2", "rn") for p in parts[1:])
        if head == "bra":
            next_pc = self.program.labels[ops[0]]
            if thread.tid == 0:
                self.jumps[ops[0]] += 1
        elif head == "ret":
            thread.done = True
        elif opcode.startswith("mbarrier.init"):
            addr = self.address(thread, cta, ops[0])
            cta.barriers[addr] = Barrier(int(ops[1]), int(ops[1]))
        elif opcode.startswith("mbarrier.try_wait.parity"):
            bar = cta.barriers[self.address(thread, cta, ops[1])]
            ready = bar.phase != (v(ops[2]) & 1)
            if not ready:
                return False
            thread.regs[ops[0]] = 1
        elif opcode.startswith("mbarrier.arrive.expect_tx"):
            bar = cta.barriers[self.address(thread, cta, ops[1])]
            bar.tx += v(ops[2])
            bar.pending -= 1
            bar.check()
        elif opcode.startswith("mbarrier.arrive"):
            bar = cta.barriers[self.address(thread, cta, ops[-1])]
            bar.pending -= 1
            if bar.pending < 0:
                raise RingError(f"{self.program.lines[thread.pc]}: more arrivals than expected")
            bar.check()
        elif opcode.startswith("cp.async.bulk.tensor") and ".global.mbarrier" in opcode:
            index = self.map_index(thread, cta, ops[1])
            bar = cta.barriers[self.address(thread, cta, ops[-1])]
            bar.tx -= self.box_bytes[index]
            self.tma_loads += 1
            if bar.tx < 0:
                raise RingError(
                    f"{self.program.lines[thread.pc]}: the loads complete more bytes than the "
                    "stage's expect_tx"
                )
            bar.check()
        elif head == "bar":
            if not self.named_barrier(thread, cta, opcode, ops, reps):
                return False
        elif head in ("mov", "cvta", "cvt") and not float_op:
            self.set(thread, ops[0], v(ops[1]))
        elif head in ("ld", "ldu") and ".param" in opcode:
            index = int(ops[1].strip("[]").removeprefix("arg"))
            self.set(thread, ops[0], (index + 1) * PARAM_BASE)
        elif head == "ld" and ".shared" in opcode:
            self.set(thread, ops[0], cta.shared.get(self.address(thread, cta, ops[1]), 0))
        elif head == "st" and ".shared" in opcode and parts[-1] in ("u32", "b32"):
            cta.shared[self.address(thread, cta, ops[0])] = v(ops[1]) & MASK32
        elif head == "ld" and ".global" in opcode and parts[-1] in ("u32", "b32", "s32"):
            self.set(thread, ops[0], self.global_u32.get(self.address(thread, cta, ops[1]), 0))
        elif head == "st" and ".global" in opcode and parts[-1] in ("u32", "b32"):
            self.global_u32[self.address(thread, cta, ops[0])] = v(ops[1]) & MASK32
        elif head == "atom":
            addr = self.address(thread, cta, ops[1])
            old = self.global_u32.get(addr, 0)
            assert "add" in parts, opcode
            self.global_u32[addr] = (old + v(ops[2])) & MASK32
            self.set(thread, ops[0], old)
        elif head == "setp" and not float_op:
            self.set(thread, ops[0], int(self.compare(parts[1], parts[2], v(ops[1]), v(ops[2]))))
        elif head == "selp" and not float_op:
            self.set(thread, ops[0], v(ops[1]) if v(ops[3]) else v(ops[2]))
        elif parts[-1] == "pred":
            a, b = bool(v(ops[1])), bool(v(ops[2])) if len(ops) > 2 else False
            result = {"and": a and b, "or": a or b, "xor": a != b, "not": not a}[head]
            self.set(thread, ops[0], int(result))
        elif head in _INTEGER and not float_op:
            self.integer(thread, head, parts, ops, v)
        elif float_op or head in _IGNORED:
            for operand in ops[:1]:
                if operand.startswith("%f") or operand.startswith("%r"):
                    self.set(thread, operand, 0)
        elif head in _NO_STATE or opcode.startswith("cp.async.bulk"):
            pass  # no effect on control flow or barriers (bulk stores and their groups)
        else:
            raise RingError(f"no model of {self.program.lines[thread.pc]!r}")
        thread.pc = next_pc
        return True

    def map_index(self, thread: Thread, cta: Cta, operand: str) -> int:
        """Which tensor map a `[tmap, {...}]` operand names."""
        reg = operand.strip("[]").split(",")[0].strip()
        value = self.value(thread, cta, reg)
        if value >> 60 != 1:
            raise RingError(f"{operand}: not a tensor map")
        return value & 0xFFFF

    def thread_ids(self) -> list[int]:
        """The modelled threads of a CTA: two representatives per warpgroup."""
        return [t for wg in range(self.program.threads // 128) for t in (128 * wg, 128 * wg + 1)]

    def barrier_arrivals(self, count: int) -> int:
        """The modelled threads that stand for `count` threads at a named barrier (two
        representatives per warpgroup)."""
        return count // 128 * 2

    def named_barrier(
        self, thread: Thread, cta: Cta, opcode: str, ops: list[str], reps: int
    ) -> bool:
        """bar.sync / bar.arrive (with the representatives of the threads they count)."""
        ident = int(ops[0]) if ops else 0
        count = int(ops[1]) if len(ops) > 1 else self.program.threads
        expected = self.barrier_arrivals(count)
        state = cta.named.setdefault(ident, [0, 0])
        if thread.barrier_generation is not None:
            if state[1] == thread.barrier_generation:
                return False
            thread.barrier_generation = None
            return True
        state[0] += 1
        generation = state[1]
        if state[0] == expected:
            state[0] = 0
            state[1] += 1
        if "arrive" in opcode or state[1] != generation:
            return True
        # bar.sync: block here (the pc stays) until the generation moves on.
        thread.barrier_generation = generation
        return False

    @staticmethod
    def compare(cmp: str, kind: str, a: int, b: int) -> bool:
        """setp's comparison."""
        if kind.startswith("s"):
            a = a - (1 << 32) if a & (1 << 31) else a
            b = b - (1 << 32) if b & (1 << 31) else b
        return {
            "eq": a == b,
            "ne": a != b,
            "lo": a < b,
            "lt": a < b,
            "ls": a <= b,
            "le": a <= b,
            "hi": a > b,
            "gt": a > b,
            "hs": a >= b,
            "ge": a >= b,
        }[cmp]

    def integer(self, thread: Thread, head: str, parts: list[str], ops: list[str], v: Any) -> None:
        """An integer instruction."""
        a = v(ops[1])
        b = v(ops[2]) if len(ops) > 2 else 0
        if head == "mad":
            result = a * b + v(ops[3])
        elif head == "mul":
            result = a * b
        elif head == "add":
            result = a + b
        elif head == "sub":
            result = a - b
        elif head == "div":
            result = a // b
        elif head == "rem":
            result = a % b
        elif head == "min":
            result = min(a, b)
        elif head == "max":
            result = max(a, b)
        elif head == "and":
            result = a & b
        elif head == "or":
            result = a | b
        elif head == "xor":
            result = a ^ b
        elif head == "shr":
            result = a >> b
        elif head == "shl":
            result = a << b
        else:
            raise RingError(f"integer op {head}")
        if "wide" not in parts and parts[-1] in ("u32", "b32", "s32"):
            result &= MASK32
        self.set(thread, ops[0], result)


_NO_STATE = {"wgmma", "fence", "prefetch", "setmaxnreg", "stmatrix", "griddepcontrol"}
"""Instructions that touch none of the modelled state (griddepcontrol orders this grid
after the stream's previous one, which the model does not run)."""
_INTEGER = {
    "mad",
    "mul",
    "add",
    "sub",
    "div",
    "rem",
    "min",
    "max",
    "and",
    "or",
    "xor",
    "shr",
    "shl",
}
_IGNORED = {
    "ld",
    "st",
    "red",
    "ex2",
    "rcp",
    "tanh",
    "cvt",
    "abs",
    "neg",
    "fma",
    "max",
    "min",
    "shfl",
}


def run_grid(
    ptx: str,
    plan: Any,
    ctas: int | Sequence[int] | None = None,
    grid: int | None = None,
    quantum: int = 20000,
) -> Model:
    """Run CTAs of a launch of `grid` CTAs (the plan's by default): the first `ctas` (an
    int), those listed, or all; each thread `quantum` instructions at a time. The model,
    with its counts."""
    if plan.cluster != 1:
        raise ValueError("the ring model runs CTAs one after another: no clusters")
    model = Model(
        parse(ptx), [m.box_bytes for m in plan.tensor_maps], grid or plan.grid, quantum=quantum
    )
    if ctas is None:
        ctas = model.grid
    for ctaid in range(min(ctas, model.grid)) if isinstance(ctas, int) else ctas:
        cta = model.run_cta(ctaid)
        for addr, bar in cta.barriers.items():
            if bar.pending != bar.expected or bar.tx:
                raise RingError(f"CTA {ctaid}: mbarrier @{addr} ends mid-phase: {bar}")
    return model
