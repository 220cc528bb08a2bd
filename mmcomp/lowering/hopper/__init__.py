"""The pieces of `lower-schedule-to-hopper`, one module per concern.

    plan        TmaOperand, the operand and shared-memory plan, the launch data
    context     the state every concern shares: builder, values, thread registers
    barriers    the named-barrier ids, allocated from the warp roles
    index       index arithmetic -> 32-bit ptx instructions (rewrite patterns)
    control     the schedule's scf loops and ifs -> the hopper level's scf.for / scf.if
    ring        the mbarrier ring: stage positions, waits, releases
    producer    the producer's TMA loads (and the non-specialized kernels' loads ahead)
    mainloop    the consumers' K loop, one class per warp-specialization mode
    split_k     the f32 workspace, the arrival counter and the reduction
    addressing  global element addresses of the epilogue (64-bit wide offsets)
    pointwise   the epilogue's fusion pointwise ops -> ptx float ops (rewrite patterns)
    epilogue    the registers epilogue: element values, operand loads, stores
    epilogue_smem  the shared-memory epilogue: swizzled boxes stored by TMA
    kernel      the kernel's skeleton: prologue, roles, the consumer's tile ops

`mmcomp.passes.lower_schedule_to_hopper.lower_kernel` puts them together in a
`hopper.kernel` and writes the launch data on it.
"""
