"""relay-plan --run's and relay-bench's (CPU) memory estimates bound the peak they reach.

Each command runs in a fresh child of a fresh Python, whose RUSAGE_CHILDREN ru_maxrss is then
that command's peak resident memory alone. The peak of the same command at count 1 is the
program's own baseline (code, libraries, threads); the estimate must cover peak - baseline, and
stay within twice it (an estimate that refuses runs that fit is a defect too).

Run as: python3 run_memory.py <relay-plan> <relay-bench>
"""
import json
import subprocess
import sys

MEASURE = ("import resource, subprocess, sys\n"
           "out = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
           "sys.stderr.write(out.stderr)\n"
           "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
           "print(out.returncode)\n"
           "print(out.stdout)\n")


def measure(command):
    text = subprocess.run([sys.executable, "-c", MEASURE] + command, check=True,
                          capture_output=True, text=True).stdout
    peak, rc, stdout = text.split("\n", 2)
    assert int(rc) == 0, (command, rc, stdout)
    return int(peak), json.loads(stdout)


# The case (reduce-scatter A=4 fused: helpers hold 1.5n of scratch) and one of each other
# collective, out of place and in place, at counts that need a few hundred MiB.
CASES = [
    "--collective reduce-scatter --active 4 --ranks 8 --mode fused --count 1000003",
    "--collective allreduce --active 2 --ranks 8 --mode fused --dtype bf16 --count 3000000",
    "--collective all-gather --active 2 --ranks 8 --mode fused --in-place --count 2000000",
    "--collective all-to-all --active 4 --ranks 8 --mode single --count 2000000",
    "--collective reduce-scatter --active 4 --ranks 8 --mode single --in-place --count 1500000",
]


# relay-bench rows: one size each, every mode, routes with and without a direct baseline run.
BENCH_CASES = [
    ("-C reduce-scatter -A 4 -m fused", "16M"),
    ("-C allreduce -A 2 -m parallel -r relay --baseline direct", "12M"),
    ("-C all-gather -A 2 -m single -r pipelined", "32M"),
    ("-C all-to-all -A 4 -m fused -d float32", "16M"),
]


def check(what, estimate, peak, base):
    used = peak - base
    print("%s: estimate %.1f MiB, measured %.1f MiB (peak %.1f - baseline %.1f), %.2fx"
          % (what, estimate / 2**20, used / 2**20, peak / 2**20, base / 2**20, estimate / used))
    assert estimate >= used, "the estimate is below the measured peak"
    assert estimate <= 2 * used, "the estimate is more than twice the measured peak"


def main(plan, bench):
    for args, size in BENCH_CASES:
        common = [bench] + args.split() + ["-n", "2", "-w", "1", "--json", "-"]
        base, _ = measure(common + ["-b", "4K", "-e", "4K"])
        peak, report = measure(common + ["-b", size, "-e", size])
        assert all(r["wrong"] == 0 for r in report["rows"]), report["rows"]
        check("relay-bench %s -b %s" % (args, size), max(r["host_memory_estimate_bytes"] for r in report["rows"]),
              peak, base)
    for args in CASES:
        command = [plan] + args.split() + ["--run", "--json"]
        base, _ = measure([plan] + args.split()[:-1] + ["1", "--run", "--json"])
        peak, report = measure(command)
        assert report["run"]["ok"], report["run"]
        check("relay-plan " + args, report["run"]["memory_estimate_bytes"], peak, base)

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
