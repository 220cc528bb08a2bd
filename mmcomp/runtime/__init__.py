"""The CUDA runtime on cuda-python: context, module load, TMA descriptors, launch, cache."""
