#!/usr/bin/env python3
"""Control experiment for the 2-thread speed-up of the ensembles: is the CPU time a path-step costs on
2 threads higher because of the executor (shared state, hand-off, allocation) or because of the
machine (two busy cores slow each other: shared caches, memory bandwidth, frequency, or virtual CPUs
on one physical core)?

It runs, interleaved over several rounds, one ensemble benchmark of ncsde_bench_models as
  solo      one process, threads:1, the machine otherwise idle;
  pair      two independent processes, threads:1 each, at once (nothing shared but the machine);
  threads2  one process, threads:2;
and reports the medians: pair/solo is what the machine charges two busy cores; the threads:2 CPU per
path-step over threads:1 is what the executor run charges. When the two agree the executor adds
nothing measurable and the missing speed-up is the machine's.

    bench/thread_scaling.py --binary build/bench/ncsde_bench_models \
        [--benchmark ensemble/em_batched/attention/m:4] [--rounds 5] [--out FILE.json]
"""
import argparse
import json
import statistics
import subprocess
import sys

UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def start(binary, name, threads, min_time):
    cmd = [binary, f"--benchmark_filter=^{name}/threads:{threads}/", "--benchmark_format=json",
           f"--benchmark_min_time={min_time}"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def result(proc):
    out, _ = proc.communicate()
    if proc.returncode != 0:
        sys.exit(f"thread_scaling: the benchmark failed (exit {proc.returncode})")
    b = json.loads(out)["benchmarks"][0]
    steps = b["path_steps_per_iteration"]
    return {"real_ns": b["real_time"] * UNIT_NS[b["time_unit"]] / steps,
            "cpu_ns": b["cpu_time"] * UNIT_NS[b["time_unit"]] / steps}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--benchmark", default="ensemble/em_batched/attention/m:4")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--out")
    args = ap.parse_args()
    solo, pair, two = [], [], []
    for _ in range(args.rounds):
        solo.append(result(start(args.binary, args.benchmark, 1, args.min_time)))
        a, b = (start(args.binary, args.benchmark, 1, args.min_time) for _ in range(2))
        pair.extend([result(a), result(b)])
        two.append(result(start(args.binary, args.benchmark, 2, args.min_time)))
    med = lambda rows, key: statistics.median(r[key] for r in rows)  # noqa: E731
    out = {
        "benchmark": args.benchmark, "rounds": args.rounds,
        "solo_cpu_ns_per_path_step": med(solo, "cpu_ns"),
        "pair_cpu_ns_per_path_step": med(pair, "cpu_ns"),
        "threads2_cpu_ns_per_path_step": med(two, "cpu_ns"),
        "threads2_real_ns_per_path_step": med(two, "real_ns"),
        "solo_real_ns_per_path_step": med(solo, "real_ns"),
    }
    out["two_processes_cpu_over_solo"] = out["pair_cpu_ns_per_path_step"] / out["solo_cpu_ns_per_path_step"]
    out["threads2_cpu_over_threads1"] = (out["threads2_cpu_ns_per_path_step"]
                                         / out["solo_cpu_ns_per_path_step"])
    out["threads2_speedup"] = out["solo_real_ns_per_path_step"] / out["threads2_real_ns_per_path_step"]
    out["two_processes_throughput_over_solo"] = 2.0 / out["two_processes_cpu_over_solo"]
    text = json.dumps(out, indent=2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
