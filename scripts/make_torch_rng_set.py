#!/usr/bin/env python3
"""Writes torch_rng sets with the local torch (CPU; check torch.backends.mkl.is_available(): the
reference sets are made without MKL), to check the engine's TorchGenerator on draws it has not seen.

  scripts/make_torch_rng_set.py set OUT_DIR [--seed S]
      a set in golden/torch_rng's format (index.json + NAME_probs.npy + expected NAME_tokens.npy,
      NAME.npy per draw) with fresh seeds, shapes and probability rows; then
      chatterbox-golden torch-rng --golden OUT_DIR --out RESULT_DIR and compare the files.
  scripts/make_torch_rng_set.py t3-sampling GOLDEN_DIR OUT_NPY [--seed S]
      the tokens torch.manual_seed(S) then the official T3 sampler (temperature 0.8, min_p 0.05,
      top_p 1: tts.py generate()'s defaults) draws from the golden case's repetition-penalised
      teacher-forced logits (t3_tf_logits_penalized.npy), one torch.multinomial per step
      (tests/data/torch_rng/t3_sampled_tokens_seed1234.npy).
"""
import argparse
import json
import pathlib

import numpy as np
import torch


def draw(kind, shape):
    if kind == "rand":
        return torch.rand(*shape)
    if kind == "randn":
        return torch.randn(*shape)
    if kind == "rand_f64":
        return torch.rand(*shape, dtype=torch.float64)
    if kind == "rand_then_randn":
        return torch.cat([torch.rand(1, shape[1]).flatten(), torch.randn(*shape).flatten()])
    raise ValueError(kind)


def make_set(out, seed):
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    index = {"torch": torch.__version__, "mkl": torch.backends.mkl.is_available(),
             "made_by": "scripts/make_torch_rng_set.py set", "multinomial": [], "draws": []}
    for i in range(6):
        name, case_seed = f"multinomial_{i}", int(rng.integers(0, 2**63))
        vocab, steps = int(rng.integers(2, 9000)), int(rng.integers(1, 30))
        logits = torch.from_numpy(rng.normal(0, 3, (steps, vocab)).astype(np.float32))
        # Some rows with removed tokens, as after min-p / top-p.
        logits[logits < float(rng.uniform(-8, 2))] = -float("inf")
        logits[:, 0] = 0.0  # every row keeps a token
        probs = torch.softmax(logits, dim=-1)
        torch.manual_seed(case_seed)
        tokens = torch.cat([torch.multinomial(probs[s:s + 1], num_samples=1).flatten() for s in range(steps)])
        np.save(out / f"{name}_probs.npy", probs.numpy())
        np.save(out / f"{name}_tokens.npy", tokens.numpy())
        index["multinomial"].append({"name": name, "seed": case_seed, "vocab": vocab, "steps": steps})
    sizes = [1, 2, 7, 15, 16, 17, 31, 33, 80, 1000, 4323, 9 * 480 * 7]
    for i, n in enumerate(sizes):
        kind = ["rand", "randn", "randn", "rand_f64"][i % 4]
        case_seed = int(rng.integers(0, 2**63))
        shape = [n] if kind != "rand_then_randn" else [1, 9, n]
        torch.manual_seed(case_seed)
        name = f"draw_{i}_{kind}"
        np.save(out / f"{name}.npy", draw(kind, shape).numpy())
        index["draws"].append({"name": name, "seed": case_seed, "kind": kind, "shape": shape})
    case_seed = int(rng.integers(0, 2**63))
    torch.manual_seed(case_seed)
    np.save(out / "draw_hift.npy", draw("rand_then_randn", [1, 9, 480 * 33]).numpy())
    index["draws"].append({"name": "draw_hift", "seed": case_seed, "kind": "rand_then_randn", "shape": [1, 9, 480 * 33]})
    (out / "index.json").write_text(json.dumps(index, indent=1))


def t3_sampling(golden, out, seed):
    rows = torch.from_numpy(np.load(golden / "t3_tf_logits_penalized.npy"))
    temperature, min_p = 0.8, 0.05
    torch.manual_seed(seed)
    tokens = []
    for logits in rows:
        logits = logits[None, :] / temperature
        probs = torch.softmax(logits, dim=-1)  # transformers' MinPLogitsWarper
        logits = logits.masked_fill(probs < min_p * probs.max(dim=-1, keepdim=True).values, -float("inf"))
        tokens.append(int(torch.multinomial(torch.softmax(logits, dim=-1), num_samples=1)))
    np.save(out, np.array(tokens, dtype=np.int64))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    s = sub.add_parser("set")
    s.add_argument("out", type=pathlib.Path)
    s.add_argument("--seed", type=int, default=2026)
    t = sub.add_parser("t3-sampling")
    t.add_argument("golden", type=pathlib.Path)
    t.add_argument("out", type=pathlib.Path)
    t.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    if args.what == "set":
        make_set(args.out, args.seed)
    else:
        t3_sampling(args.golden, args.out, args.seed)


if __name__ == "__main__":
    main()
