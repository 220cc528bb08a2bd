"""Compare the PTX of this checkout with an earlier build's, over a corpus of fusions.

    python tools/compare_ptx.py --base DIR [--cases 300] [--seed 1] [--jobs 8] [--show N]
                                [--pointwise] [--sass]

DIR holds the earlier mmcomp as the package `mmcomp_base` (see tools/compare_builds.py for
how to make it). The corpus is every case the GPU tests run (tests/unit/cases.py), every
problem of tools/bench.py's suite under the heuristic's schedule, and the fuzzer's cuda
cases (`tools/fuzz.py`: random fusions, shapes and schedule keywords); with `--pointwise`
also every pointwise op of the epilogue under each output dtype and both epilogue modes.
Each fusion is written as IR text by this checkout, parsed by both builds, and compiled by
both with the same keywords; the row compares the PTX text.

A refactor of the lowering proves it changed nothing by "identical" on every case: equal
PTX assembles to equal SASS. With `--sass` (needs ptxas and nvdisasm), a case whose PTX
differs is assembled by both builds: "same SASS counts" when both assemble without spills
and the SASS has as many instructions of each class (`SASS_CLASSES`: wgmma, global and
shared loads and stores, barriers, the mbarrier and TMA operations) and in all, "same SASS
class counts, +N instructions" when only the total moved; else its counts are printed.
Cases where both builds refuse the keywords count as "refused (both)"; a refusal by one
build only, or different PTX, is a difference, printed with its fuzz command (the first
`--show` lines of a PTX diff too). Exit status 1 when any case differs.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import multiprocessing
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests" / "unit"))


def _compile(package: str, text: str, params: dict[str, Any]) -> tuple[str, str]:
    """("ptx", text) or ("refused", message) or ("error", message) from `package`."""
    mmcomp = importlib.import_module(package)
    errors = importlib.import_module(f"{package}.errors")
    try:
        kernel = mmcomp.compile(mmcomp.parse(text), backend="cuda", **params)
    except (errors.FusionError, errors.ScheduleError) as error:
        return "refused", str(error).splitlines()[0]
    except Exception as error:  # noqa: BLE001  (any other failure is reported as such)
        return "error", f"{type(error).__name__}: {error}"
    return "ptx", kernel.ptx


def _fusion_text(item: tuple[str, int]) -> tuple[str, dict[str, Any], str]:
    """(IR text, keywords, label) of one corpus item."""
    import fuzz

    kind, index = item
    if kind == "case":
        import cases

        selected = cases.CASES[index]
        return str(selected.fusion()), dict(selected.params), f"GPU test case {selected.name}"
    if kind == "bench":
        import bench

        problem = bench.suite(False)[index]
        module = importlib.import_module("compare_builds")
        fusion = module.build_fusion("mmcomp", problem)
        return str(fusion), {}, f"bench {problem.name}"
    if kind == "pointwise":
        op, dtype, epilogue = POINTWISE[index]
        text = POINTWISE_FUSION.replace("OP", op).replace("DTYPE", dtype)
        params = {"epilogue": epilogue, "tile": (128, 128, 64), "split_k": 1}
        return text, params, f"pointwise {op} -> {dtype}, epilogue {epilogue}"
    case = fuzz.draw_case(SEED, index, "cuda", fuzz.default_features("cuda"))
    built = fuzz.build(case.spec, case.name)
    return str(built.fusion), case.params, case.command()


SEED = 1

POINTWISE_OPS = (
    "fusion.add %1, %u",
    "fusion.sub %1, %u",
    "fusion.mul %1, %u",
    "fusion.div %1, %u",
    "fusion.neg %1",
    "fusion.relu %1",
    "fusion.exp %1",
    "fusion.tanh %1",
    "fusion.sigmoid %1",
    "fusion.silu %1",
    "fusion.gelu %1 approximate tanh",
    "fusion.gelu %1 approximate none",
)
"""The epilogue's pointwise ops (on the linear's result %1 and an [m, n] operand %u)."""
POINTWISE_FUSION = """
func.func @pointwise(%a: tensor<300x256xbf16>, %w: tensor<264x256xbf16>,
                     %bias: tensor<264xbf16>, %t: tensor<300x264xbf16>)
    -> tensor<300x264xDTYPE> {
  %1 = fusion.linear %a, %w, %bias
      : (tensor<300x256xbf16>, tensor<264x256xbf16>, tensor<264xbf16>) -> tensor<300x264xf32>
  %u = fusion.cast %t : tensor<300x264xbf16> to tensor<300x264xf32>
  %2 = OP : tensor<300x264xf32>
  %3 = fusion.cast %2 : tensor<300x264xf32> to tensor<300x264xbf16>
  %4 = fusion.cast %3 : tensor<300x264xbf16> to tensor<300x264xf32>
  %5 = fusion.mul %4, %1 : tensor<300x264xf32>
  %6 = fusion.cast %5 : tensor<300x264xf32> to tensor<300x264xDTYPE>
  func.return %6 : tensor<300x264xDTYPE>
}
"""
"""A linear with a bias, one pointwise op, a rounding to bf16 fed to more arithmetic, and
an output of DTYPE."""
POINTWISE = [
    (op, dtype, epilogue)
    for op in POINTWISE_OPS
    for dtype in ("bf16", "f16", "f32")
    for epilogue in ("registers", "smem")
]
"""The pointwise corpus (`--pointwise`): every op, output dtype and epilogue mode."""


SASS_CLASSES = {
    "HGMMA": r"\bHGMMA\b",
    "LDG": r"\bLDG\b",
    "STG": r"\bSTG\b",
    "LDS": r"\bLDS\b",
    "STS": r"\bSTS\b",
    "STSM": r"\bSTSM\b",
    "BAR": r"\bBAR\b",
    "SYNCS": r"\bSYNCS\b",
    "UTMA": r"\bUTMA",
    "all": r"^\s+/\*[0-9a-f]{4,}\*/",
}
"""The SASS instruction classes `--sass` counts (regexes over nvdisasm's lines)."""


def sass_counts(ptx: str) -> dict[str, int] | str:
    """The instruction count of each SASS class of the assembled PTX, or why not."""
    from mmcomp.arch import ptxas

    try:
        assembled = ptxas.assemble_checked(ptx)
        lines = ptxas.disassemble(assembled.cubin).splitlines()
    except ptxas.PtxasError as error:
        return str(error).splitlines()[0]
    return {
        name: sum(1 for line in lines if re.search(pattern, line))
        for name, pattern in SASS_CLASSES.items()
    }


def compare(item: tuple[str, int]) -> tuple[str, str, str]:
    """(status, label, detail) of one item: identical, refused (both), or a difference
    (with `--sass`, "same SASS counts" where only the PTX differs)."""
    text, params, label = _fusion_text(item)
    new = _compile("mmcomp", text, params)
    old = _compile("mmcomp_base", text, params)
    if new == old:
        return ("identical" if new[0] == "ptx" else f"{new[0]} (both)"), label, ""
    if new[0] != "ptx" or old[0] != "ptx":
        return "differs", label, f"base {old[0]}: {old[1][:300]}\n  new {new[0]}: {new[1][:300]}"
    if SASS:
        old_counts, new_counts = sass_counts(old[1]), sass_counts(new[1])
        if not isinstance(new_counts, dict) or not isinstance(old_counts, dict):
            return "differs", label, f"SASS: base {old_counts}\n  new {new_counts}"
        if new_counts == old_counts:
            return "same SASS counts", label, ""
        classes = [name for name in SASS_CLASSES if name != "all"]
        if all(new_counts[name] == old_counts[name] for name in classes):
            delta = new_counts["all"] - old_counts["all"]
            return f"same SASS class counts, {delta:+d} instructions", label, ""
        return "differs", label, f"SASS counts: base {old_counts}\n  new {new_counts}"
    diff = difflib.unified_diff(old[1].splitlines(), new[1].splitlines(), "base", "new", n=1)
    return "differs", label, "\n".join(diff)


SASS = False
"""Compare the SASS instruction counts where the PTX differs (`--sass`)."""


def _init(base: str, seed: int, sass: bool) -> None:
    global SEED, SASS
    SEED = seed
    SASS = sass
    sys.path.insert(0, base)
    os.environ["MMCOMP_CACHE_DIR"] = tempfile.mkdtemp(prefix="mmcomp-compare-ptx-")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--base", required=True, help="directory holding mmcomp_base")
    parser.add_argument("--cases", type=int, default=300, help="fuzz cases")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--show", type=int, default=40, help="diff lines shown per case")
    parser.add_argument(
        "--pointwise",
        action="store_true",
        help="also every epilogue pointwise op under each output dtype and epilogue mode",
    )
    parser.add_argument(
        "--sass",
        action="store_true",
        help="where the PTX differs, compare the SASS instruction counts (ptxas, nvdisasm)",
    )
    args = parser.parse_args()
    import bench
    import cases

    items = [("case", i) for i in range(len(cases.CASES))]
    items += [("bench", i) for i in range(len(bench.suite(False)))]
    items += [("fuzz", i) for i in range(args.cases)]
    if args.pointwise:
        items += [("pointwise", i) for i in range(len(POINTWISE))]
    context = multiprocessing.get_context("spawn")
    counts: dict[str, int] = {}
    setup = (str(Path(args.base).resolve()), args.seed, args.sass)
    with context.Pool(args.jobs, _init, setup) as pool:
        for status, label, detail in pool.imap(compare, items):
            counts[status] = counts.get(status, 0) + 1
            if status == "differs":
                print(f"DIFFERS {label}")
                print("\n".join(detail.splitlines()[: args.show]))
    print(", ".join(f"{count} {status}" for status, count in sorted(counts.items())))
    return 1 if counts.get("differs") else 0


if __name__ == "__main__":
    sys.exit(main())
