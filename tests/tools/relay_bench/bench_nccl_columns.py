"""relay-bench's table read the way a parser written for nccl-tests output reads it.

nccl-tests prints, after '#' comment lines, one row per size whose first 13 whitespace-separated
fields are: size count type redop root, then time algbw busbw #wrong out of place, then the same
in place. relay-bench must put those first, in that order; its own columns follow.

Run as: python3 bench_nccl_columns.py <relay-bench>
"""
import subprocess
import sys

NCCL_HEADER = ["size", "count", "type", "redop", "root",
               "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"]


def main(bench):
    out = subprocess.run([bench, "-C", "allreduce,all-gather", "-A", "2", "-b", "4K", "-e", "64K",
                          "-f", "4", "-n", "1", "-w", "0", "-d", "float32"],
                         check=True, capture_output=True, text=True).stdout
    headers = [line[1:].split() for line in out.splitlines()
               if line.startswith("#") and line[1:].split()[:1] == ["size"]]
    assert len(headers) == 2, out
    for h in headers:
        assert h[:13] == NCCL_HEADER, h
    rows = [line.split() for line in out.splitlines() if line.strip() and not line.startswith("#")]
    # 2 collectives x 3 sizes (4K, 16K, 64K).
    assert len(rows) == 6, out
    for i, f in enumerate(rows):
        size, count, dtype, redop, root = int(f[0]), int(f[1]), f[2], f[3], int(f[4])
        assert size == (4096, 16384, 65536)[i % 3], f
        assert count * 4 == size and dtype == "float32", f  # 4-byte elements
        assert redop == ("sum" if i < 3 else "none") and root == -1, f
        for at in (5, 9):  # out of place, in place
            time_us, algbw, busbw, wrong = float(f[at]), float(f[at + 1]), float(f[at + 2]), f[at + 3]
            assert wrong == "0", f
            # algbw = size / time in GB/s (10^9 bytes), printed with 2 decimals.
            assert abs(algbw - size / (time_us * 1e3)) <= 0.006, f
            # A=2: busbw = algbw * 2(A-1)/A = algbw for allreduce, algbw / 2 for all-gather.
            factor = 1.0 if i < 3 else 0.5
            assert abs(busbw - algbw * factor) <= 0.011, f
    print("ok: %d rows read as nccl-tests output" % len(rows))


if __name__ == "__main__":
    main(sys.argv[1])
