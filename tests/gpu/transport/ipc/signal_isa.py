#!/usr/bin/env python3
"""Checks the ipc transport's signals in an AMD code object, as the compiler emitted them.

The HIP build of a program that holds the ipc kernels (relay_ipc_tests_hip_gfx942, ...) carries
a bundle of code objects, one per architecture, for each of its HIP objects, in its .hip_fatbin
section. This script takes the objects of --arch out of them (clang-offload-bundler),
disassembles them (llvm-objdump) and checks, in every function of namespace relay::ipc
(docs/amd.md, the ipc transport's section):

  polls     every poll loop (for each s_sleep, the smallest loop holding it and a load: every
            wait of the ipc kernels backs off) loads only with sc0 sc1, a system-scope load on
            gfx942 and gfx950;
            a plain load there (no sc bits) may be served from this device's caches while a peer
            on another device writes the word, and fails the check;
  acquires  a function with a poll loop has a system-scope acquire (buffer_inv sc0 sc1);
  releases  every signal raise (a 64-bit atomic maximum at system scope, which gfx942 emits as a
            compare-and-swap loop) comes after a system-scope release (buffer_wbl2 sc0 sc1) in
            its function.

Exits 0 when all hold (printing what it counted), 1 naming each violation, 77 (skipped) when
the binary has no object for --arch, or (outside CI=true) when a tool is missing. Standard
library only.
"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

NAMESPACE = "N5relay3ipc"  # mangled relay::ipc


def fatbin_of(path):
    """The .hip_fatbin section of ELF file `path` (bytes), or None."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        sys.exit(f"{path}: not a 64-bit ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def section(i):
        name, _, _, _, offset, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        return name, offset, size

    _, str_off, _ = section(shstrndx)
    for i in range(shnum):
        name, offset, size = section(i)
        end = data.index(b"\0", str_off + name)
        if data[str_off + name:end] == b".hip_fatbin":
            return data[offset:offset + size]
    return None


MAGICS = (b"__CLANG_OFFLOAD_BUNDLE__", b"CCOB")  # a bundle, a compressed bundle


def code_objects(binary, arch, bundler, work):
    """Paths of the code objects of `arch` unbundled from `binary`: one per bundle in its
    .hip_fatbin section (a program linked from several HIP objects holds one each)."""
    fatbin = fatbin_of(binary)
    if fatbin is None:
        return []
    starts = sorted({m.start() for magic in MAGICS
                     for m in re.finditer(re.escape(magic), fatbin)})
    out = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(fatbin)
        bundle = os.path.join(work, f"bundle{i}")
        with open(bundle, "wb") as f:
            f.write(fatbin[start:end])
        listed = subprocess.run([bundler, "--list", "--type=o", f"--input={bundle}"],
                                capture_output=True, text=True)
        targets = [t for t in listed.stdout.split() if re.search(rf"--{arch}(:|$)", t)]
        if listed.returncode != 0 or not targets:
            continue
        co = os.path.join(work, f"{arch}-{i}.co")
        subprocess.run([bundler, "--unbundle", "--type=o", f"--input={bundle}",
                        f"--targets={targets[0]}", f"--output={co}"], check=True)
        out.append(co)
    return out


INSTRUCTION = re.compile(r"^\s+([a-z_0-9]+)\s*(.*?)\s*//\s*([0-9A-F]+):(.*)$")
FUNCTION = re.compile(r"^[0-9a-f]+ <(.+)>:$")
TARGET = re.compile(r"<(.*)\+0x([0-9a-f]+)>")


def functions(disassembly):
    """{name: [(address, mnemonic, operands)]} of the disassembly's functions."""
    out, name = {}, None
    for line in disassembly.splitlines():
        if m := FUNCTION.match(line):
            name = m.group(1)
            out[name] = []
            continue
        if name is not None and (m := INSTRUCTION.match(line)):
            # A branch's target follows the encoding, as <function+0xoffset>.
            target = TARGET.search(m.group(4))
            operands = m.group(2) + (f" <+0x{target.group(2)}>" if target else "")
            out[name].append((int(m.group(3), 16), m.group(1), operands))
    return out


def loops(body, start):
    """(first, last) indices of every backward branch's loop in `body`; `start`: its address."""
    index = {address: i for i, (address, _, _) in enumerate(body)}
    found = []
    for i, (_, mnemonic, operands) in enumerate(body):
        if not mnemonic.startswith(("s_cbranch", "s_branch")):
            continue
        if (m := TARGET.search(operands)) is None:
            continue
        target = start + int(m.group(2), 16)
        if target in index and index[target] <= i:
            found.append((index[target], i))
    return found


def is_vector_load(mnemonic):
    """A load of global or flat memory (scratch: this thread's own stack, never a peer's word)."""
    return mnemonic.startswith(("global_load", "flat_load", "buffer_load"))


def poll_loops(body, start):
    """The poll loops of `body`: for each s_sleep, the smallest loop holding it and a load (the
    wait it backs off in; not the loops around the wait, whose loads are the work's)."""
    found = set()
    spans = loops(body, start)
    for i, (_, mnemonic, _) in enumerate(body):
        if mnemonic != "s_sleep":
            continue
        holding = [(last - first, first, last) for first, last in spans
                   if first <= i <= last
                   and any(is_vector_load(m) for _, m, _ in body[first:last + 1])]
        if holding:
            _, first, last = min(holding)
            found.add((first, last))
    return sorted(found)


def system_scope(operands):
    return re.search(r"\bsc0\b", operands) and re.search(r"\bsc1\b", operands)


def check(fns):
    errors, polls, poll_loops_found, raises = [], 0, 0, 0
    seen = set()  # (function, address) of each load counted: nested loops share loads
    for name, body in fns.items():
        if NAMESPACE not in name or not body:
            continue
        start = body[0][0]
        has_acquire = any(m == "buffer_inv" and system_scope(o) for _, m, o in body)
        waiting = False
        for first, last in poll_loops(body, start):
            loads = [(a, m, o) for a, m, o in body[first:last + 1] if is_vector_load(m)]
            poll_loops_found += 1
            waiting = True
            for address, mnemonic, operands in loads:
                if (name, address) in seen:
                    continue
                seen.add((name, address))
                if system_scope(operands):
                    polls += 1
                else:
                    errors.append(f"{name} +0x{address - start:x}: a poll without sc0 sc1: "
                                  f"{mnemonic} {operands}")
        if waiting and not has_acquire:
            errors.append(f"{name}: polls, and no system-scope acquire (buffer_inv sc0 sc1)")
        released = False
        for address, mnemonic, operands in body:
            if mnemonic == "buffer_wbl2" and system_scope(operands):
                released = True
            if re.match(r"(global|flat)_atomic_(cmpswap|umax)_x2$", mnemonic) and \
                    re.search(r"\bsc1\b", operands):
                raises += 1
                if not released:
                    errors.append(f"{name} +0x{address - start:x}: a signal raise before any "
                                  f"system-scope release (buffer_wbl2 sc0 sc1): {mnemonic}")
    if poll_loops_found == 0:
        errors.append("no poll loop found in relay::ipc (a wait without backoff, or no kernels?)")
    if raises == 0:
        errors.append("no signal raise found in relay::ipc")
    return errors, polls, poll_loops_found, raises


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("--arch", default="gfx942")
    parser.add_argument("--bundler", default="clang-offload-bundler-19")
    parser.add_argument("--objdump", default="llvm-objdump-19")
    args = parser.parse_args()
    missing = [t for t in (args.bundler, args.objdump) if shutil.which(t) is None]
    if missing:
        # CI=true makes the check mandatory, as .ci/run does for the compilers.
        print(f"cannot disassemble: {', '.join(missing)} not found (Debian: llvm-19 and clang-19)")
        return 1 if os.environ.get("CI") == "true" else 77
    fns = {}
    with tempfile.TemporaryDirectory() as work:
        objects = code_objects(args.binary, args.arch, args.bundler, work)
        if not objects:
            print(f"{args.binary} holds no {args.arch} code object: skipped")
            return 77
        for i, co in enumerate(objects):
            disassembly = subprocess.run([args.objdump, "-d", f"--mcpu={args.arch}", co],
                                         capture_output=True, text=True, check=True).stdout
            fns.update({f"{name} (object {i})": body
                        for name, body in functions(disassembly).items()})
    errors, polls, poll_loops, raises = check(fns)
    for e in errors:
        print(e)
    print(f"{args.arch}: {polls} system-scope polls in {poll_loops} poll loops, "
          f"{raises} signal raises after a system-scope release; {len(errors)} violations")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
