#!/usr/bin/env python3
"""Counts, over the model ports, the tensor `let`s whose shape `cargo contracts shapes` knows.

Usage: scripts/measure-known-shapes.py [--verbose] [FILE...]
(default: tests/tests/models/*.rs). Needs a built `cargo-contracts` in `$CARGO_TARGET_DIR/debug`
(`target/debug` without it).
A `let` is counted once per line and name; integers (`= B`), floats, `bool`s, tuples, host numbers
(`Vec<f32>`), lists before their first push (`Vec`), `None`s, tracing's span guards (`enter`) and
what `dims4`, `dim`, `device` and the like read from a tensor (a `Shape[*S]` too), layers and
values of the crate's own types (`Conv2d`, `Linear[E -> 10]`, `Config`) are left out.
A `let`'s shape is judged, not its dtype: `_[B, T, E]` (a `VarBuilder`'s dtype) is a fully known
shape, counted apart too.
"""
import glob, re, subprocess, sys

if "--help" in sys.argv or "-h" in sys.argv:
    print(__doc__.strip())
    sys.exit(0)
verbose = "--verbose" in sys.argv
files = [a for a in sys.argv[1:] if not a.startswith("--")] or sorted(glob.glob("tests/tests/models/*.rs"))
import os
binary = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "debug", "cargo-contracts")
if not os.path.isfile(binary):
    sys.exit(f"no {binary}: build it first (`cargo build -p candle-contracts-cli`, with the same "
             "CARGO_TARGET_DIR)")
totals = {"known": 0, "joined": 0, "never": 0, "rank": 0, "dtype": 0, "unknown": 0}
causes = {}
open_dtype = 0
for path in files:
    src = open(path).read().splitlines()
    impl = None
    pending = False
    targets = []
    for line in src:
        m = re.match(r"\s*impl(?:<[^>]*>)?\s+(?:[\w:<>]+\s+for\s+)?(\w+)", line)
        if m and line.lstrip().startswith("impl"):
            impl = m.group(1) if line.startswith("impl") else impl
        if line.startswith("}"):
            impl = None if not line.startswith("} ") else impl
        if "#[contract" in line and not line.lstrip().startswith("//"):
            pending = True
        # A contract on a struct, an `impl` or a `mod` is not a function's.
        if pending and re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|impl|mod|enum)\b", line):
            pending = False
        m = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?fn\s+(\w+)", line)
        if m and pending:
            pending = False
            name = f"{impl}::{m.group(1)}" if (impl and line.startswith("    ")) else m.group(1)
            targets.append(name)
    for name in targets:
        out = subprocess.run([binary, "shapes", f"{path}:{name}"], capture_output=True, text=True)
        # A free function and a method of one name: the free one by its module's path.
        if out.returncode != 0 and "::" not in name and "names 2 functions" in out.stderr:
            stem = path.rsplit("/", 1)[-1].removesuffix(".rs")
            out = subprocess.run([binary, "shapes", f"{path}:{stem}::{name}"],
                                 capture_output=True, text=True)
        if out.returncode != 0:
            print(f"  cannot read {path}:{name}: {out.stderr.strip()[:200]}", file=sys.stderr)
            continue
        rows = [r for r in out.stdout.splitlines() if len(r.split()) >= 3 and r.split()[0].isdigit()]
        # The op is the last column, where a row has one: every op starts at one offset, past
        # every type (a `let` of no op, `k_seq_len  ?`, ends before it).
        last_at = lambda r: len(r.rstrip()) - len(r.rstrip().split()[-1])
        op_at = max((last_at(r) for r in rows), default=0)
        for row in rows:
            cols = row.split()
            if last_at(row) != op_at:
                cols = cols + [""]
            # Integers (`= B`, `= _`), floats and tuples of sizes are not tensors.
            # Nor are host numbers (`Vec<f32>`) and a list before its first push (`Vec`).
            # Nor is a whole shape read from a tensor (`Shape[*S]`).
            if cols[2] in ("=", "float", "bool", "Vec", "None") or cols[2].startswith(("(", "DType::", "Vec<", "Shape[")):
                continue
            # Nor a layer (`Conv2d`, `Linear[E -> 10]`) or a value of the crate's own type
            # (`Config`): `shapes` names its type.
            if re.match(r"[A-Z]\w*(\[|$)", cols[2]) and not cols[2].startswith("Option<"):
                continue
            ty = " ".join(cols[2:-1])
            op = cols[-1]
            # Sizes, devices and dtypes read from a tensor are not tensors, known or not.
            if op in ("dim", "dims", "dims1", "dims2", "dims3", "dims4", "dims5", "device",
                      "dtype", "rank", "elem_count"):
                continue
            # A tracing span's guard (`let _enter = self.span.enter();`) is no tensor.
            if op == "enter" and ty == "?":
                continue
            # The shape is judged, not the dtype (`_[B, T, E]`: a `VarBuilder`'s dtype, unknown
            # where the constructor does not show it, on a fully known shape).
            shape = ty[ty.index("["):] if "[" in ty else ty
            tokens = re.split(r"[\[\],\s()*+/-]+", shape)
            if ty == "?":
                kind = "unknown"
            elif ty == "!":
                # Never bound: the call before it panics (`todo!()`); counted apart.
                kind = "never"
            elif "_" in tokens or ".." in shape or "?" in tokens:
                kind = "rank" if "[" in shape and ".." not in shape else "dtype"
            elif any(re.fullmatch(r"\?\d+", t) for t in tokens):
                # Every dim a size, one of them named where two branches gave it differently.
                kind = "joined"
            else:
                kind = "known"
            totals[kind] += 1
            if kind in ("known", "joined") and re.match(r"(Option<)?_\[", ty):
                open_dtype += 1
            if kind not in ("known", "joined", "never"):
                causes[op] = causes.get(op, 0) + 1
            if verbose and kind != "known":
                print(f"{path}:{cols[0]} {name} {cols[1]} {ty} ({op})")
n = sum(totals.values())
print(f"{n} tensor lets: {totals['known']} with a fully known shape ({100*totals['known']//max(n,1)}%), "
      f"{totals['joined']} known up to a size two branches give differently (`?1`), "
      f"{totals['never']} never bound (after a call that panics), "
      f"{totals['rank']} rank known, {totals['dtype']} less, {totals['unknown']} unknown")
both = totals['known'] + totals['joined']
print(f"fully known, or known on each branch (each `?N` one of two known sizes, as `shapes` "
      f"says under its table): {both} ({100*both//max(n,1)}%)")
print(f"of those {both}, {open_dtype} with a dtype not known (`_[B, T, E]`)")
print("not fully known, by op:", ", ".join(f"{k} {v}" for k, v in sorted(causes.items(), key=lambda kv: -kv[1])))
