#!/usr/bin/env python3
"""Per-call overhead of the Python package against the C API on the same model, text and parameters.

The C side is build/tests/c_api_synthesize (a C program on one C API session) kept running in its
timed mode: each line sent to it makes one call and it answers that call's seconds. Calls alternate
one for one with ChatterboxTTS.generate in this process (its session pool, worker thread, NumPy and
torch conversion), so both see the same moment's machine; the overhead is the median of the paired
differences. The load average is read before and after.

  PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py \\
      --model build/tiny/model.gguf --helper build/tests/c_api_synthesize
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time

from chatterbox_engine.tts import ChatterboxTTS


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="an English model (folder or .gguf)")
    parser.add_argument("--helper", required=True, help="build/tests/c_api_synthesize")
    parser.add_argument("--text", default="Hello there, this is a benchmark of the Python package.")
    parser.add_argument("--max-tokens", type=int, default=50)
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--batch", type=int, default=4, help="the engine's T3 batch, both sides")
    args = parser.parse_args()

    load_before = os.getloadavg()
    model = ChatterboxTTS.from_local(args.model, "cpu", batch=args.batch)
    model.generate(args.text, max_new_tokens=args.max_tokens)  # warm-up, as the helper's first call
    c_api, python = [], []
    with tempfile.TemporaryDirectory() as scratch:
        helper = subprocess.Popen(
            [args.helper, args.model, args.text, "0", str(args.max_tokens), "-", str(args.batch),
             os.path.join(scratch, "c.f32"), "timed"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(args.pairs):
            helper.stdin.write("call\n")
            helper.stdin.flush()
            c_api.append(float(helper.stdout.readline()))
            start = time.perf_counter()
            model.generate(args.text, max_new_tokens=args.max_tokens)
            python.append(time.perf_counter() - start)
        helper.stdin.close()
        if helper.wait() != 0:
            raise SystemExit("c_api_synthesize failed")
    load_after = os.getloadavg()
    differences = [p - c for p, c in zip(python, c_api)]
    c_median = statistics.median(c_api)
    overhead = statistics.median(differences)
    print(f"{args.pairs} pairs of calls, {args.max_tokens} tokens each: C API median {c_median * 1e3:.2f} ms/call, "
          f"Python median {statistics.median(python) * 1e3:.2f} ms/call; paired difference median "
          f"{overhead * 1e3:+.3f} ms ({overhead / c_median * 100:+.2f} %), quartiles "
          f"{statistics.quantiles(differences, n=4)[0] * 1e3:+.3f} / {statistics.quantiles(differences, n=4)[2] * 1e3:+.3f} ms; "
          f"load {load_before[0]:.2f} -> {load_after[0]:.2f}")


if __name__ == "__main__":
    main()
