"""Command-line options shared by the PyTorch benchmarks. Free of torch on purpose: the thread
count must reach the environment before torch (and the OpenBLAS it loads) is imported, since
OpenBLAS reads OPENBLAS_NUM_THREADS once, when it loads, and torch.set_num_threads does not
reach it. gradsync's benches likewise pin OpenBLAS to one thread.
"""
import argparse
import os


def add_model_args(parser):
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--mlp-width", type=int, default=512)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--batch", type=int, default=8, help="sequences per step (per rank)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--threads", type=int, default=1, help="threads per process (torch, OpenMP, OpenBLAS)")


def parse(description, extra=None):
    """Parses the options and exports the thread count for OpenMP and OpenBLAS."""
    parser = argparse.ArgumentParser(description=description)
    add_model_args(parser)
    if extra is not None:
        extra(parser)
    args = parser.parse_args()
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(args.threads)
    return args
