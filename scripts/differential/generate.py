#!/usr/bin/env python3
"""Differential cases for `candle_contracts::nn` against PyTorch (CPU).

Generates seeded cases, valid and invalid, for every op of the module, runs each through
PyTorch and writes what it returned (values, shape, dtype) or that it raised, to a JSON fixture
that `tests/tests/e2e/nn_differential.rs` replays with `cargo test` (no torch needed there).

    pip install torch numpy
    python3 scripts/differential/generate.py            # writes tests/tests/fixtures/nn_pytorch.json
    python3 scripts/differential/generate.py --seed 7 --per-op 500 --out /tmp/cases.json

A Rust run against any fixture: `NN_DIFFERENTIAL_FIXTURE=/tmp/cases.json cargo test -p
candle-contracts-tests --test e2e nn_differential -- --nocapture`.

Each case records torch's verdict (`torch.ok`) and the verdict candle-contracts documents
(`expect_ok`). They differ only where the library's docs say it refuses what PyTorch computes;
such a case carries a `divergence` naming the documented rule:

- `nonfinite_loss`: a NaN or infinite logit (or log-probability) on a kept row, where PyTorch
  returns a NaN or infinite loss;
- `positive_log_prob`: `nll` log-probabilities above 0, which PyTorch sums as they are;
- `empty_mean`: the mean over no kept rows (an empty batch, every target ignored), NaN in
  PyTorch;
- `target_range`: a binary cross-entropy target outside 0..=1, which PyTorch does not check;
- `empty_ids_shape`: `gather` and `scatter_add` keep their shape rules (same rank, ids no
  larger than the other tensors) for empty ids, which PyTorch accepts whatever their shape.

Other conventions, not divergences of verdict:
- ids (targets, token ids, indices) may be u8, u32 or i64 here; PyTorch takes int64, so they are
  converted for the reference;
- `one_hot` follows candle-nn's convention: -1 gives an all-`off_value` row (PyTorch's
  `F.one_hot` has no such value), so its reference is built from `F.one_hot` on the other ids;
- the plain `cross_entropy` and `nll` have no ignore index (candle's), so the reference passes
  PyTorch an ignore index no id can equal.
"""

import argparse
import json
import math
import random

import torch
import torch.nn.functional as F

DTYPES = {
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "f32": torch.float32,
    "f64": torch.float64,
    "u8": torch.uint8,
    "u32": torch.int64,  # held as int64 in torch; candle's u32
    "i64": torch.int64,
}
ID_DTYPES = ["u8", "u32", "i64"]
NO_IGNORE = -(2**62)


def encode(value):
    """A float for JSON: NaN and infinities as strings (JSON has none)."""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    return value


def tensor_json(dtype, t):
    flat = t.detach().to(torch.float64 if dtype in ("f16", "bf16", "f32", "f64") else torch.int64)
    return {
        "dtype": dtype,
        "shape": list(t.shape),
        "data": [encode(v) for v in flat.reshape(-1).tolist()],
    }


def make(dtype, shape, values):
    """A torch tensor of the reference dtype from flat python values (ids wrap for u8/u32 as
    candle stores them: the generator only writes values the dtype holds)."""
    return torch.tensor(values, dtype=DTYPES[dtype]).reshape(shape)


class Gen:
    def __init__(self, rng):
        self.rng = rng

    def shape(self, rank, lo=1, hi=4):
        return [self.rng.randint(lo, hi) for _ in range(rank)]

    def floats(self, n, lo=-3.0, hi=3.0, specials=0.0):
        out = []
        for _ in range(n):
            if self.rng.random() < specials:
                out.append(self.rng.choice([math.nan, math.inf, -math.inf]))
            else:
                out.append(round(self.rng.uniform(lo, hi), 4))
        return out

    def ids(self, dtype, n, bound, bad=0.0):
        """`n` ids in 0..bound; with probability `bad` each, one outside (negative for i64)."""
        out = []
        for _ in range(n):
            if self.rng.random() < bad or bound == 0:
                if dtype == "i64" and self.rng.random() < 0.5:
                    out.append(self.rng.choice([-1, -100, -(2**40)]))
                else:
                    top = {"u8": 255, "u32": 2**32 - 1, "i64": 2**40}[dtype]
                    out.append(self.rng.choice([bound, bound + 1, top]) if bound <= top else top)
            else:
                out.append(self.rng.randrange(bound))
        return out

    def float_dtype(self):
        return self.rng.choices(["f32", "f64", "f16", "bf16"], [6, 3, 1, 1])[0]


def numel(shape):
    return math.prod(shape)


def run_torch(fn):
    try:
        out = fn()
        return {"ok": True, "out": out}
    except Exception as error:  # torch raises RuntimeError, IndexError, ValueError
        return {"ok": False, "error": str(error).splitlines()[0][:200]}


def result_json(out, dtype):
    return tensor_json(dtype, out)


def torch_dtype_name(t):
    for name in ("f16", "bf16", "f32", "f64"):
        if t.dtype == DTYPES[name]:
            return name
    return "i64"


# --- losses -----------------------------------------------------------------------------


def loss_case(g, op):
    """cross_entropy, nll, cross_entropy_with, nll_with."""
    with_options = op.endswith("_with")
    dtype = g.float_dtype()
    tdtype = g.rng.choice(ID_DTYPES)
    n = g.rng.choice([0, 1, 2, 3, 5]) if g.rng.random() < 0.1 else g.rng.randint(1, 5)
    c = g.rng.randint(1, 5)
    specials = g.rng.choice([0.0, 0.0, 0.0, 0.1])
    if op.startswith("nll"):
        # Log-probabilities; some above 0 sometimes.
        hi = 0.0 if g.rng.random() < 0.7 else 1.0
        values = g.floats(n * c, -4.0, hi, specials)
    else:
        values = g.floats(n * c, -4.0, 4.0, specials)
    ignore = None
    reduction = "mean"
    if with_options:
        ignore = g.rng.choice([None, -100, 0, 1, 255])
        if tdtype != "i64" and ignore == -100:
            ignore = g.rng.choice([None, 0, 255])
        reduction = g.rng.choice(["mean", "sum", "none"])
    target = g.ids(tdtype, n, c, bad=g.rng.choice([0.0, 0.0, 0.2]))
    if ignore is not None and n > 0 and g.rng.random() < 0.5:
        for i in range(n):
            if g.rng.random() < 0.4:
                target[i] = ignore
    # Shapes wrong now and then.
    tshape = [n]
    r = g.rng.random()
    if r < 0.08:
        tshape = [n + 1]
        target = target + [0]
    elif r < 0.12:
        tshape = [n, 1]
    x = make(dtype, [n, c], values)
    t = torch.tensor(target, dtype=torch.int64).reshape(tshape)
    torch_ignore = ignore if ignore is not None else NO_IGNORE

    def reference():
        xx = x
        if op.startswith("cross_entropy"):
            return F.cross_entropy(xx, t, ignore_index=torch_ignore, reduction=reduction)
        return F.nll_loss(xx, t, ignore_index=torch_ignore, reduction=reduction)

    outcome = run_torch(reference)
    expect_ok, divergence = outcome["ok"], None
    if outcome["ok"] and tshape == [n]:
        kept = [i for i in range(n) if target[i] != ignore]
        rows = [values[i * c:(i + 1) * c] for i in kept]
        finite = all(math.isfinite(v) for row in rows for v in row)
        if op.startswith("cross_entropy") and not finite:
            expect_ok, divergence = False, "nonfinite_loss"
        elif op.startswith("nll") and any(math.isnan(v) for row in rows for v in row):
            expect_ok, divergence = False, "nonfinite_loss"
        elif op.startswith("nll") and any(v > 0 for row in rows for v in row):
            expect_ok, divergence = False, "positive_log_prob"
        elif reduction == "mean" and not kept:
            expect_ok, divergence = False, "empty_mean"
    params = {}
    if with_options:
        params = {"ignore_index": ignore, "reduction": reduction}
    return case(op, [tensor_json(dtype, x), tensor_json(tdtype, t)], params, outcome, expect_ok,
                divergence, dtype)


def bce_case(g, op):
    logit = op == "binary_cross_entropy_with_logit"
    dtype = g.float_dtype()
    tdtype = dtype
    r = g.rng.random()
    if r < 0.15:
        tdtype = g.rng.choice(["f32", "f64", "f16", "bf16"])
    elif r < 0.2:
        tdtype = g.rng.choice(["u8", "i64"])
    shape = g.shape(g.rng.randint(1, 3))
    if g.rng.random() < 0.05:
        shape = [0]
    n = numel(shape)
    specials = g.rng.choice([0.0, 0.0, 0.0, 0.1])
    if logit:
        scale = g.rng.choice([3.0, 3.0, 30.0, 100.0])
        values = g.floats(n, -scale, scale, specials)
    else:
        values = g.floats(n, 0.0, 1.0, specials)
        if g.rng.random() < 0.15 and n > 0:
            values[g.rng.randrange(n)] = g.rng.choice([-0.5, 1.5, 0.0, 1.0])
    if tdtype in ("u8", "i64"):
        tvalues = [g.rng.randint(0, 1) for _ in range(n)]
    else:
        tvalues = g.floats(n, 0.0, 1.0)
        if g.rng.random() < 0.15 and n > 0:
            tvalues[g.rng.randrange(n)] = g.rng.choice([-0.25, 1.25, math.nan])
    tshape = shape
    if g.rng.random() < 0.08:
        tshape = shape + [1]
        # Same count, another shape: PyTorch refuses the size mismatch.
    x = make(dtype, shape, values)
    t = make(tdtype, tshape, tvalues) if tdtype not in ("u8",) else torch.tensor(
        tvalues, dtype=torch.uint8).reshape(tshape)

    def reference():
        if logit:
            return F.binary_cross_entropy_with_logits(x, t)
        return F.binary_cross_entropy(x, t)

    outcome = run_torch(reference)
    expect_ok, divergence = outcome["ok"], None
    if outcome["ok"]:
        if n == 0:
            expect_ok, divergence = False, "empty_mean"
        elif any(not (0.0 <= v <= 1.0) for v in tvalues):
            expect_ok, divergence = False, "target_range"
        elif logit and any(not math.isfinite(v) for v in values):
            expect_ok, divergence = False, "nonfinite_loss"
    return case(op, [tensor_json(dtype, x), tensor_json(tdtype, t)], {}, outcome, expect_ok,
                divergence, None)


# --- index ops ----------------------------------------------------------------------------


def source_tensor(g, shape):
    dtype = g.rng.choices(["f32", "f64", "i64"], [6, 2, 1])[0]
    if dtype == "i64":
        values = [g.rng.randint(-50, 50) for _ in range(numel(shape))]
    else:
        values = g.floats(numel(shape))
    return dtype, make(dtype, shape, values)


def ids_tensor(g, dtype, shape, bound, bad):
    values = g.ids(dtype, numel(shape), bound, bad)
    return torch.tensor(values, dtype=torch.int64).reshape(shape)


def embedding_case(g, op):
    v, d = g.rng.randint(1, 6), g.rng.randint(1, 4)
    dtype = g.rng.choice(["f32", "f64", "f16"])
    table = make(dtype, [v, d], g.floats(v * d))
    idtype = g.rng.choice(ID_DTYPES)
    ishape = g.shape(g.rng.randint(0, 2), 0 if g.rng.random() < 0.1 else 1, 4)
    ids = ids_tensor(g, idtype, ishape, v, g.rng.choice([0.0, 0.0, 0.2]))
    if g.rng.random() < 0.05:
        table = table.reshape(-1)  # rank 1 table: refused by both
    outcome = run_torch(lambda: F.embedding(ids, table))
    return case(op, [tensor_json(idtype, ids), tensor_json(dtype, table)], {}, outcome,
                outcome["ok"], None, None)


def index_select_case(g):
    shape = g.shape(g.rng.randint(1, 3))
    dtype, source = source_tensor(g, shape)
    dim = g.rng.randrange(len(shape))
    idtype = g.rng.choice(ID_DTYPES)
    ishape = [g.rng.randint(0, 5)]
    if g.rng.random() < 0.05:
        ishape = [1, 2]
    ids = ids_tensor(g, idtype, ishape, shape[dim], g.rng.choice([0.0, 0.0, 0.2]))
    outcome = run_torch(lambda: torch.index_select(source, dim, ids))
    return case("index_select", [tensor_json(dtype, source), tensor_json(idtype, ids)],
                {"dim": dim}, outcome, outcome["ok"], None, None)


def gather_case(g):
    rank = g.rng.randint(1, 3)
    shape = g.shape(rank)
    dtype, source = source_tensor(g, shape)
    dim = g.rng.randrange(rank)
    idtype = g.rng.choice(ID_DTYPES)
    ishape = []
    for axis in range(rank):
        if axis == dim:
            ishape.append(g.rng.randint(1, 5))
        else:
            r = g.rng.random()
            ishape.append(shape[axis] + 1 if r < 0.07 else g.rng.randint(1, shape[axis]))
    if g.rng.random() < 0.05:
        ishape[g.rng.randrange(rank)] = 0
    if g.rng.random() < 0.04:
        ishape = ishape + [1]
    ids = ids_tensor(g, idtype, ishape, shape[dim], g.rng.choice([0.0, 0.0, 0.2]))
    outcome = run_torch(lambda: torch.gather(source, dim, ids))
    expect_ok, divergence = outcome["ok"], None
    if outcome["ok"] and not fits(ishape, shape, dim):
        expect_ok, divergence = False, "empty_ids_shape"
    return case("gather", [tensor_json(dtype, source), tensor_json(idtype, ids)], {"dim": dim},
                outcome, expect_ok, divergence, None)


def fits(small, large, except_dim):
    """PyTorch's size rule of gather and scatter, which it skips for empty ids."""
    return len(small) == len(large) and all(
        s <= l for axis, (s, l) in enumerate(zip(small, large)) if axis != except_dim)


def scatter_add_case(g):
    rank = g.rng.randint(1, 3)
    shape = g.shape(rank)
    dtype, base = source_tensor(g, shape)
    dim = g.rng.randrange(rank)
    idtype = g.rng.choice(ID_DTYPES)
    ishape = []
    for axis in range(rank):
        if axis == dim:
            ishape.append(g.rng.randint(1, 5))
        else:
            r = g.rng.random()
            ishape.append(shape[axis] + 1 if r < 0.07 else g.rng.randint(1, shape[axis]))
    if g.rng.random() < 0.05:
        ishape[g.rng.randrange(rank)] = 0
    sshape = list(ishape)
    r = g.rng.random()
    if r < 0.25:
        sshape = [s + g.rng.randint(0, 2) for s in sshape]  # a larger source
    elif r < 0.32:
        axis = g.rng.randrange(rank)
        sshape[axis] = max(0, sshape[axis] - 1)  # a smaller source: refused
    sdtype = dtype if g.rng.random() < 0.95 else ("f64" if dtype != "f64" else "f32")
    if sdtype == "i64":
        svalues = [g.rng.randint(-9, 9) for _ in range(numel(sshape))]
    else:
        svalues = g.floats(numel(sshape))
    source = make(sdtype, sshape, svalues)
    ids = ids_tensor(g, idtype, ishape, shape[dim], g.rng.choice([0.0, 0.0, 0.2]))
    outcome = run_torch(lambda: base.scatter_add(dim, ids, source))
    expect_ok, divergence = outcome["ok"], None
    if outcome["ok"] and not (fits(ishape, sshape, None) and fits(ishape, shape, dim)):
        expect_ok, divergence = False, "empty_ids_shape"
    return case("scatter_add",
                [tensor_json(dtype, base), tensor_json(idtype, ids), tensor_json(sdtype, source)],
                {"dim": dim}, outcome, expect_ok, divergence, None)


def index_add_case(g):
    rank = g.rng.randint(1, 3)
    shape = g.shape(rank)
    dtype, base = source_tensor(g, shape)
    dim = g.rng.randrange(rank)
    idtype = g.rng.choice(ID_DTYPES)
    k = g.rng.randint(0, 4)
    sshape = list(shape)
    sshape[dim] = k
    if g.rng.random() < 0.08:
        sshape[g.rng.randrange(rank)] += 1
    if dtype == "i64":
        svalues = [g.rng.randint(-9, 9) for _ in range(numel(sshape))]
    else:
        svalues = g.floats(numel(sshape))
    source = make(dtype, sshape, svalues)
    ids = ids_tensor(g, idtype, [k], shape[dim], g.rng.choice([0.0, 0.0, 0.2]))
    outcome = run_torch(lambda: base.index_add(dim, ids, source))
    return case("index_add",
                [tensor_json(dtype, base), tensor_json(idtype, ids), tensor_json(dtype, source)],
                {"dim": dim}, outcome, outcome["ok"], None, None)


def one_hot_case(g):
    idtype = g.rng.choice(ID_DTYPES)
    depth = g.rng.randint(1, 5)
    ishape = g.shape(g.rng.randint(1, 2))
    values = g.ids(idtype, numel(ishape), depth, g.rng.choice([0.0, 0.0, 0.2]))
    if idtype == "i64" and g.rng.random() < 0.4:
        values = [-1 if g.rng.random() < 0.3 else v for v in values]
    ids = torch.tensor(values, dtype=torch.int64).reshape(ishape)
    on, off = g.rng.choice([(1.0, 0.0), (0.9, 0.1), (5.0, -1.0)])

    def reference():
        if ((ids < -1) | (ids >= depth)).any():
            raise ValueError("one_hot: index outside 0..depth and not -1")
        hot = F.one_hot(ids.clamp(min=0), depth).to(torch.float32)
        hot = hot * (ids != -1).unsqueeze(-1).to(torch.float32)
        return off + (on - off) * hot

    outcome = run_torch(reference)
    return case("one_hot", [tensor_json(idtype, ids)],
                {"depth": depth, "on_value": on, "off_value": off}, outcome, outcome["ok"], None,
                None)


def case(op, inputs, params, outcome, expect_ok, divergence, _dtype):
    entry = {
        "op": op,
        "inputs": inputs,
        "params": params,
        "torch": {"ok": outcome["ok"]},
        "expect_ok": expect_ok,
    }
    if divergence:
        entry["divergence"] = divergence
    if outcome["ok"]:
        out = outcome["out"]
        entry["torch"]["result"] = tensor_json(torch_dtype_name(out), out)
    else:
        entry["torch"]["error"] = outcome["error"]
    return entry


def pinned_cases():
    """The cases issue 11 reported, and one of each mixed-dtype binary cross-entropy, so every
    seed replays them."""
    L = torch.int64
    cases = []
    source = torch.tensor([[[0.0, 1.0], [2.0, 3.0]]])
    ids = torch.tensor([[[0], [0]]], dtype=L)
    cases.append(case("gather", [tensor_json("f32", source), tensor_json("i64", ids)],
                      {"dim": 0}, run_torch(lambda: torch.gather(source, 0, ids)), True, None,
                      None))
    base = torch.arange(12.0).reshape(3, 4)
    ids2 = torch.tensor([[0], [1]], dtype=L)
    ones = torch.ones(2, 1)
    cases.append(case("scatter_add",
                      [tensor_json("f32", base), tensor_json("u32", ids2), tensor_json("f32", ones)],
                      {"dim": 1}, run_torch(lambda: base.scatter_add(1, ids2, ones)), True, None,
                      None))
    for a, b in [("f32", "f64"), ("f64", "f32"), ("f16", "f32"), ("f32", "bf16")]:
        x = torch.tensor([0.3, -1.2, 4.0]).to(DTYPES[a])
        t = torch.tensor([1.0, 0.25, 0.0]).to(DTYPES[b])
        outcome = run_torch(lambda: F.binary_cross_entropy_with_logits(x, t))
        cases.append(case("binary_cross_entropy_with_logit", [tensor_json(a, x), tensor_json(b, t)],
                          {}, outcome, True, None, None))
        p = torch.tensor([0.3, 0.5, 0.9]).to(DTYPES[a])
        outcome = run_torch(lambda: F.binary_cross_entropy(p, t))
        cases.append(case("binary_cross_entropy", [tensor_json(a, p), tensor_json(b, t)], {},
                          outcome, False, None, None))
    return cases


OPS = {
    "cross_entropy": lambda g: loss_case(g, "cross_entropy"),
    "nll": lambda g: loss_case(g, "nll"),
    "cross_entropy_with": lambda g: loss_case(g, "cross_entropy_with"),
    "nll_with": lambda g: loss_case(g, "nll_with"),
    "binary_cross_entropy": lambda g: bce_case(g, "binary_cross_entropy"),
    "binary_cross_entropy_with_logit": lambda g: bce_case(g, "binary_cross_entropy_with_logit"),
    "embedding": lambda g: embedding_case(g, "embedding"),
    "Embedding::forward": lambda g: embedding_case(g, "Embedding::forward"),
    "index_select": index_select_case,
    "gather": gather_case,
    "scatter_add": scatter_add_case,
    "index_add": index_add_case,
    "one_hot": one_hot_case,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--per-op", type=int, default=45,
                        help="cases per op (gather and scatter_add, whose size rules are the "
                             "subtlest, get twice as many)")
    parser.add_argument("--out", default="tests/tests/fixtures/nn_pytorch.json")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    g = Gen(rng)
    cases = []
    for op, make_case in OPS.items():
        for _ in range(args.per_op * (2 if op in ("gather", "scatter_add") else 1)):
            cases.append(make_case(g))
    cases.extend(pinned_cases())
    for i, entry in enumerate(cases):
        entry["id"] = i
    fixture = {
        "generator": "scripts/differential/generate.py",
        "torch": torch.__version__,
        "seed": args.seed,
        "cases": cases,
    }
    with open(args.out, "w") as f:
        json.dump(fixture, f, separators=(",", ":"))
        f.write("\n")
    valid = sum(1 for c in cases if c["torch"]["ok"])
    divergent = sum(1 for c in cases if "divergence" in c)
    print(f"{len(cases)} cases ({valid} torch accepts, {len(cases) - valid} it refuses, "
          f"{divergent} documented divergences) -> {args.out}")


if __name__ == "__main__":
    main()
