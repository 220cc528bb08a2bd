"""The pieces of `convert-hopper-to-ptx`: the registers that hold the hopper level's typed
values (`registers`) and the patterns of the epilogue's element accesses (`access`)."""
