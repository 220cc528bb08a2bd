"""The rewrite patterns of `materialize-schedule`, one module per concern.

    body           the fusion function's parts and its ops on tiles (the tile ops' regions)
    kernel         the kernel's frame: signature, counts, this CTA; tile coordinates; the
                   launch function of runtime extents
    data_parallel  persistent and one-tile-per-CTA kernels, split-K's fixup (a pattern)
    stream_k       stream-K and hybrid stream-K kernels, their fixups (a pattern each)
    tiles          sched.contract_tile -> the K loop, sched.write_tile -> the epilogue
                   and stores (a pattern each)

`mmcomp.passes.materialize_schedule` applies them with xDSL's rewriter.
"""
