"""mmcomp's dialects: fusion (tensors), sched (schedules), hopper (warp roles, TMA, wgmma), ptx."""
