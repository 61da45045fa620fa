"""mpitempo: precise, reproducible, statistically sound MPI benchmarking."""

__version__ = "0.1.0"
