"""gradsync's Python package: what a PyTorch script needs to run well as a gradsync script job.

    import gradsync.torch as gt

Everything is optional: a plain torchrun script runs unmodified as a script job
(`gradsync run --workers N -- python3 train.py`); gradsync.torch adds gradsync's parameter
exchange, its exact-once sampler, committed checkpoints and step reports. See python/README.md.
"""
