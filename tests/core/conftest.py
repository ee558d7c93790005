"""The core tests' process has two logical CPU devices, so mirrored runs (2 replicas) are tested in-process.

TensorFlow fixes its devices when its runtime starts (the first op), so this happens at collection,
before any test runs. Single-device runs place everything on /CPU:0 and share the same thread pools,
so they are unaffected (the bit-for-bit exactness tests run in this same process).
"""
from training_core.distribute import ensure_logical_cpus

ensure_logical_cpus(2)
