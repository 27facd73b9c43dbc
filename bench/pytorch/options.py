"""Command-line options shared by the PyTorch benchmarks. Free of torch on purpose: the thread
count must reach the environment before torch (and the OpenBLAS it loads) is imported, since
OpenBLAS reads OPENBLAS_NUM_THREADS once, when it loads, and torch.set_num_threads does not
reach it. gradsync's benches likewise pin OpenBLAS to one thread.
"""
import argparse
import os


# gradsync's model presets (libs/nn/src/presets.cc): flavour, layers, heads, kv-heads (0: as many
# as heads), width, mlp-width, seq-len, vocab.
PRESETS = {
    "gpt-tiny": ("gpt2", 4, 4, 0, 128, 512, 128, 256),
    "gpt2-124m": ("gpt2", 12, 12, 0, 768, 3072, 1024, 50257),
    "minimind-26m": ("llama", 8, 8, 2, 512, 1408, 512, 256),
}


def apply_preset(args):
    """Sets args.flavour, kv_heads and the model's shape from args.preset; --seq-len and --vocab,
    when given, still win, as `--set model.transformer.seqLen=...` does for gradsync."""
    flavour, layers, heads, kv_heads, width, mlp_width, seq_len, vocab = PRESETS[args.preset]
    args.flavour, args.layers, args.heads, args.width, args.mlp_width = flavour, layers, heads, width, mlp_width
    args.kv_heads = kv_heads or heads
    args.seq_len = args.seq_len or seq_len
    args.vocab = args.vocab or vocab


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
