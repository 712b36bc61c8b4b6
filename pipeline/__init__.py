"""CacheEval: the pipeline that builds the benchmark, and the harness that scores a cache.

Importing this package imports nothing heavy: the harness must work without Dagster or torch.
"""
__version__ = "0.1.0"
