"""gradsync's exports and imports against an independent reader and PyTorch models.

The safetensors reader and writer here follow the format's published description (an 8-byte
little-endian header length, a JSON header of dtype/shape/data_offsets per tensor, raw
little-endian data), not the safetensors package. The models are bench/pytorch's gpt_model.Gpt
(gpt2 flavour) and llama_model.Llama (llama flavour), written from the architectures.

1. Export: gradsync-named weights become `gradsync export --format hf` (and llmc for gpt2); the
   PyTorch model loads that export by Hugging Face's names (undoing Conv1D's transposition) or by
   llm.c's order, and its logits match `gradsync model logits` of the same weights.
2. Import: a PyTorch model's own state_dict, written as Hugging Face safetensors, gives the same
   logits in gradsync (`model logits --preset`), and a job started with model.initFrom from it
   (a learning rate of 1e-30 leaves every weight's bits unchanged) ends with those weights.

Tolerance: both sides compute in fp32 and differ only in summation order and in gradsync's exp
and tanh approximations (within 3.3e-7 relative). A length-K dot product carries a rounding error
of at most K u sum|x_i w_i| (u = 2^-24); with K <= 4 x width = 128 that is 7.6e-6 of the
magnitude of its terms, and each of the 2 layers chains about 6 products and normalisations, so
the logits may differ by up to ~1e-4 of their scale: the check allows 2e-4 x max(1, max|logit|).
A transposed, permuted or misnamed tensor changes logits by their whole scale. Exit 77: no torch.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys

try:
    import torch
except ImportError:
    print("SKIP: PyTorch is missing (Debian's python3-torch, run as /usr/bin/python3)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "pytorch"))
import gpt_model  # noqa: E402
import llama_model  # noqa: E402

DTYPES = {"F32": (torch.float32, 4), "BF16": (torch.bfloat16, 2), "F16": (torch.float16, 2)}
TOKENS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3]
LAYERS, HEADS, WIDTH, MLP, SEQ, VOCAB = 2, 4, 32, 128, 16, 64


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype, size = DTYPES[entry["dtype"]]
        begin, end = entry["data_offsets"]
        count = (end - begin) // size
        flat = torch.frombuffer(bytearray(body[begin:end]), dtype=dtype, count=count) if count else torch.zeros(0)
        tensors[name] = flat.float().reshape(entry["shape"])
    return tensors, header.get("__metadata__", {})


def write_safetensors(path, tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        raw = t.detach().contiguous().float().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def model_spec(flavour, vocab=VOCAB):
    t = {"flavour": flavour, "layers": LAYERS, "heads": HEADS, "kvHeads": HEADS if flavour == "gpt2" else 2,
         "width": WIDTH, "mlpWidth": MLP, "seqLen": SEQ, "vocabSize": vocab, "normEps": 1e-5}
    if flavour == "llama":
        t["ropeTheta"] = 10000.0
    return {"preset": "gpt-tiny" if flavour == "gpt2" else "minimind-26m", "transformer": t}


def set_args(flavour, vocab=VOCAB):
    spec = model_spec(flavour, vocab)
    args = ["--preset", spec["preset"]]
    for k, v in spec["transformer"].items():
        args += ["--set", f"transformer.{k}={v}"]
    return args


def torch_model(flavour, vocab=VOCAB):
    if flavour == "gpt2":
        return gpt_model.Gpt(LAYERS, HEADS, WIDTH, MLP, SEQ, vocab)
    return llama_model.Llama(LAYERS, HEADS, 2, WIDTH, MLP, SEQ, vocab, rope_theta=10000.0)


def randomise(model, seed):
    """Every parameter nonzero and of its usual scale, so a misplaced element shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            scale = 0.1 if p.dim() == 1 else 0.3 / p.shape[-1] ** 0.5
            p.copy_((1.0 if "norm" in name or "ln_" in name and name.endswith("weight") else 0.0)
                    + scale * torch.randn(p.shape, generator=g))
    return model


# Hugging Face names of gpt_model.Gpt's parameters, and whether HF's Conv1D keeps them transposed.
def gpt2_hf_names(layers):
    names = {"transformer.wte.weight": ("wte.weight", False), "transformer.wpe.weight": ("wpe.weight", False),
             "transformer.ln_f.weight": ("ln_f.weight", False), "transformer.ln_f.bias": ("ln_f.bias", False)}
    for l in range(layers):
        for hf, mine in (("ln_1", "ln_1"), ("attn.c_attn", "qkv"), ("attn.c_proj", "proj"), ("ln_2", "ln_2"),
                         ("mlp.c_fc", "fc"), ("mlp.c_proj", "fc_proj")):
            for kind in ("weight", "bias"):
                conv1d = kind == "weight" and not hf.startswith("ln")
                names[f"transformer.h.{l}.{hf}.{kind}"] = (f"blocks.{l}.{mine}.{kind}", conv1d)
    return names


def to_hf(model, flavour):
    state = model.state_dict()
    if flavour == "llama":
        return dict(state)
    return {hf: (state[mine].t() if conv1d else state[mine]) for hf, (mine, conv1d) in gpt2_hf_names(LAYERS).items()}


def from_hf(model, flavour, tensors):
    tensors = {k: v for k, v in tensors.items() if not k.endswith((".attn.bias", ".attn.masked_bias"))}
    if flavour == "gpt2":
        tensors = {mine: (tensors[hf].t() if conv1d else tensors[hf])
                   for hf, (mine, conv1d) in gpt2_hf_names(LAYERS).items()}
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    assert not unexpected and not missing, (missing, unexpected)


def from_llmc(model, path):
    """llm.c's train_gpt2.c order: wte (padded rows), wpe, then each kind stacked over layers."""
    with open(path, "rb") as f:
        data = f.read()
    header = struct.unpack("<256i", data[:1024])
    assert header[:8] == (20240326, 3, SEQ, VOCAB, LAYERS, HEADS, WIDTH, 128), header[:8]
    values = torch.frombuffer(bytearray(data[1024:]), dtype=torch.float32)
    at = 0

    def take(shape):
        nonlocal at
        n = 1
        for d in shape:
            n *= d
        out = values[at:at + n].reshape(shape)
        at += n
        return out

    state = {"wte.weight": take([128, WIDTH])[:VOCAB], "wpe.weight": take([SEQ, WIDTH])}
    kinds = [("ln_1.weight", [WIDTH]), ("ln_1.bias", [WIDTH]), ("qkv.weight", [3 * WIDTH, WIDTH]),
             ("qkv.bias", [3 * WIDTH]), ("proj.weight", [WIDTH, WIDTH]), ("proj.bias", [WIDTH]),
             ("ln_2.weight", [WIDTH]), ("ln_2.bias", [WIDTH]), ("fc.weight", [4 * WIDTH, WIDTH]),
             ("fc.bias", [4 * WIDTH]), ("fc_proj.weight", [WIDTH, 4 * WIDTH]), ("fc_proj.bias", [WIDTH])]
    for kind, shape in kinds:
        for l in range(LAYERS):
            state[f"blocks.{l}.{kind}"] = take(shape)
    state["ln_f.weight"], state["ln_f.bias"] = take([WIDTH]), take([WIDTH])
    assert at == values.numel(), "llm.c file longer than its header says"
    model.load_state_dict(state)


def gradsync_logits(gradsync, source, extra=()):
    out = subprocess.run([gradsync, "model", "logits", source, "--tokens", ",".join(map(str, TOKENS)), *extra],
                         check=True, capture_output=True, text=True).stdout
    return torch.tensor(json.loads(out)["logits"])


def compare(what, mine, theirs):
    with torch.no_grad():
        want = theirs.logits(torch.tensor([TOKENS]))[0]
    scale = max(1.0, want.abs().max().item())
    diff = (mine - want).abs().max().item()
    ok = diff <= 2e-4 * scale
    print(f"{'ok' if ok else 'FAIL'}: {what}: max |logit difference| {diff:.3g}, scale {scale:.3g}")
    return ok


def gradsync_names(model, flavour):
    """The same weights under gradsync's parameter names (libs/nn/transformer_params.h)."""
    s = model.state_dict()
    out = {}
    if flavour == "gpt2":
        out["wte"], out["wpe"] = s["wte.weight"], s["wpe.weight"]
        for l in range(LAYERS):
            for mine, theirs in (("ln1", "ln_1"), ("attn.qkv", "qkv"), ("attn.proj", "proj"), ("ln2", "ln_2"),
                                 ("mlp.fc", "fc"), ("mlp.proj", "fc_proj")):
                for kind in ("weight", "bias"):
                    out[f"blocks.{l}.{mine}.{kind}"] = s[f"blocks.{l}.{theirs}.{kind}"]
        out["lnf.weight"], out["lnf.bias"] = s["ln_f.weight"], s["ln_f.bias"]
        return out
    out["embed"] = s["model.embed_tokens.weight"]
    for l in range(LAYERS):
        p = f"model.layers.{l}."
        out[f"blocks.{l}.attn_norm.weight"] = s[p + "input_layernorm.weight"]
        out[f"blocks.{l}.attn.qkv.weight"] = torch.cat(
            [s[p + f"self_attn.{x}_proj.weight"] for x in ("q", "k", "v")])
        out[f"blocks.{l}.attn.o.weight"] = s[p + "self_attn.o_proj.weight"]
        out[f"blocks.{l}.mlp_norm.weight"] = s[p + "post_attention_layernorm.weight"]
        out[f"blocks.{l}.mlp.gate_up.weight"] = torch.cat([s[p + "mlp.gate_proj.weight"], s[p + "mlp.up_proj.weight"]])
        out[f"blocks.{l}.mlp.down.weight"] = s[p + "mlp.down_proj.weight"]
    out["norm.weight"] = s["model.norm.weight"]
    return out


def check_export(gradsync, work, flavour):
    source = randomise(torch_model(flavour), seed=1)
    src = os.path.join(work, f"{flavour}-gradsync.safetensors")
    write_safetensors(src, gradsync_names(source, flavour), {"gradsync.model": json.dumps(model_spec(flavour))})
    hf = os.path.join(work, f"{flavour}-hf")
    subprocess.run([gradsync, "export", src, "--format", "hf", "-o", hf], check=True, capture_output=True)
    with open(os.path.join(hf, "config.json")) as f:
        config = json.load(f)
    assert config["architectures"] == ["GPT2LMHeadModel" if flavour == "gpt2" else "LlamaForCausalLM"], config
    assert config["tie_word_embeddings"] is True, config
    tensors, _ = read_safetensors(os.path.join(hf, "model.safetensors"))
    reloaded = torch_model(flavour)
    from_hf(reloaded, flavour, tensors)
    mine = gradsync_logits(gradsync, hf)
    ok = compare(f"{flavour}: gradsync's logits against PyTorch reading `export --format hf`", mine, reloaded)
    if flavour == "gpt2":
        llmc = os.path.join(work, "gpt2-llmc.bin")
        subprocess.run([gradsync, "export", src, "--format", "llmc", "-o", llmc], check=True, capture_output=True)
        from_llmc(reloaded, llmc)
        ok &= compare("gpt2: gradsync's logits against PyTorch reading `export --format llmc`", mine, reloaded)
    return ok


def check_import(gradsync, work, flavour):
    theirs = randomise(torch_model(flavour), seed=2)
    path = os.path.join(work, f"{flavour}-pytorch.safetensors")
    write_safetensors(path, to_hf(theirs, flavour))
    return compare(f"{flavour}: gradsync reading PyTorch's Hugging Face safetensors",
                   gradsync_logits(gradsync, path, set_args(flavour)), theirs)


def check_job(gradsync, work):
    """A job started from PyTorch's weights (model.initFrom) holds them, bit for bit, after a step
    whose update rounds away (learning rate 1e-30 against weights of order 0.1)."""
    vocab = 256  # text data is tokenised bytewise
    theirs = randomise(torch_model("llama", vocab), seed=3)
    start = os.path.join(work, "start.safetensors")
    write_safetensors(start, to_hf(theirs, "llama"))
    with open(os.path.join(work, "text.txt"), "w") as f:
        f.write("weights in and out of gradsync, " * 64)
    spec = {"name": "from-pytorch", "model": dict(model_spec("llama", vocab), device="cpu", initFrom="start.safetensors"),
            "data": {"text": {"paths": ["text.txt"]}},
            "training": {"maxSteps": 1, "microBatch": 2, "lr": 1e-30}}
    with open(os.path.join(work, "job.json"), "w") as f:
        json.dump(spec, f)
    state = os.path.join(work, "state")
    subprocess.run([gradsync, "run", "job.json", "--workers", "1", "--state-dir", state, "-o", "json"], cwd=work,
                   check=True, capture_output=True, timeout=240)
    jobs = os.listdir(os.path.join(state, "artifacts"))
    after = gradsync_logits(gradsync, os.path.join(state, "artifacts", jobs[0], "weights.bin"))
    same = torch.equal(after, gradsync_logits(gradsync, start, set_args("llama", vocab)))
    print(f"{'ok' if same else 'FAIL'}: a job from model.initFrom ends with the imported weights, bit for bit")
    return compare("llama: the job's final weights against PyTorch's", after, theirs) and same and \
        check_init_optimizer(gradsync, work, spec, os.path.join(state, "artifacts", jobs[0], "checkpoints"))


def check_init_optimizer(gradsync, work, spec, checkpoints):
    """model.initOptimizer takes a finished job's checkpoint with its AdamW state; a source without
    one is refused, naming the field."""
    spec["model"]["initFrom"] = os.path.join(checkpoints, sorted(os.listdir(checkpoints))[-1])
    spec["model"]["initOptimizer"] = True
    with open(os.path.join(work, "continue.json"), "w") as f:
        json.dump(spec, f)
    run = subprocess.run([gradsync, "run", "continue.json", "--workers", "1", "--state-dir",
                          os.path.join(work, "state2"), "-o", "json"], cwd=work, capture_output=True, text=True,
                         timeout=240)
    continued = run.returncode == 0
    spec["model"]["initFrom"] = "start.safetensors"
    with open(os.path.join(work, "refused.json"), "w") as f:
        json.dump(spec, f)
    run = subprocess.run([gradsync, "run", "refused.json", "--workers", "1", "--state-dir",
                          os.path.join(work, "state3")], cwd=work, capture_output=True, text=True, timeout=240)
    refused = run.returncode != 0 and "model.initOptimizer" in run.stdout + run.stderr
    print(f"{'ok' if continued else 'FAIL'}: a job continues from a checkpoint with its optimizer state")
    print(f"{'ok' if refused else 'FAIL'}: model.initOptimizer from weights without optimizer state is refused")
    return continued and refused


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gradsync", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    args.gradsync = os.path.abspath(args.gradsync)
    shutil.rmtree(args.workdir, ignore_errors=True)  # one job per state directory, from this run
    os.makedirs(args.workdir)
    torch.manual_seed(0)
    ok = True
    for flavour in ("gpt2", "llama"):
        ok &= check_export(args.gradsync, args.workdir, flavour)
        ok &= check_import(args.gradsync, args.workdir, flavour)
    ok &= check_job(args.gradsync, args.workdir)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
