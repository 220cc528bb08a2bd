"""The target architecture (sm_90a): its limits, its shared-memory layouts, its assembler."""
