#!/usr/bin/env python3
"""Runs the benchmark issue's five whole programs, W6 (a heat stencil) and W7 (softmax of each row)
in Tandem and its peers,
checks every result against the others, and writes JSON (all samples + context), a markdown table
and a PNG chart.

    workloads_report.py run [--quick] [--sizes small|large|ends|all] [--workloads 1,3]
                            [--systems tandem,numpy,octave,eigen,torch] [--modes cpu,gpu,auto]
                            [--reps 5] [--warmup 1] [--out DIR] [--name NAME] ...
    workloads_report.py report FILE.json [FILE.json ...] [--out DIR] [--name NAME]

`scripts/bench` calls `run` (after building tandem-workloads); bench/run-workloads-gpu.sh calls it
on the GPU machine. `report` re-makes the markdown and the chart from one or more JSON files (runs
of several files are merged: a GPU run split over several calls, or a JSON made where matplotlib
was missing).

Each (workload, size, system) is one process: tandem-workloads (Tandem in each mode, and Eigen),
bench/workload_peers.py (NumPy, PyTorch eager, torch.compile) or bench/workloads.m (GNU Octave),
with a timeout; a system that times out is not run at the larger sizes of that workload. When
every system has run a (workload, size), the values are checked before any time is printed:
  W1, W2, W4-W7   every system computes the same inputs (an exact formula), so each value must lie
                  within a relative tolerance of the reference: the double-precision value stored
                  below (REFERENCE) for the sizes this script knows, else the median over the kinds
                  of system that ran (Tandem's modes count once, as do PyTorch's two);
  W3              the random paths differ, so each price must lie within 4 standard errors of the
                  Black-Scholes price (the standard error from the payoff's exact variance).
A failed check is printed loudly and its time is not valid (the table says FAILED); a value no
other system can confirm is marked unchecked. Progress goes to stderr; the JSON is rewritten after
every (workload, size), so a run cut short keeps what it measured.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = {1: "chain + sum", 2: "4K normalisation", 3: "Monte Carlo GBM", 4: "row sums + S'S", 5: "PCA (power iteration)",
         6: "heat stencil", 7: "row softmax"}
# The ranges (W6, W7: ours); the default runs the first and the last of each, --quick its own small ones.
SIZES = {1: ["1000000", "10000000", "100000000"], 2: ["1", "4", "16"], 3: ["250000", "1000000", "4000000"],
         4: ["1024", "2048", "4096", "8192"], 5: ["65536x128", "262144x256", "1048576x512"], 6: ["1024", "2048", "4096"],
         7: ["4096x1024", "16384x4096"]}
QUICK = {1: ["1000000"], 2: ["1"], 3: ["65536"], 4: ["1024"], 5: ["65536x128"], 6: ["256"], 7: ["1024x256"]}
SIZE_NAME = {1: "n", 2: "B", 3: "M", 4: "n", 5: "n x d", 6: "n", 7: "n x d"}
# Relative tolerances against the reference. W2 is single precision, and NumPy's float32 mean over
# two axes is not pairwise (5e-6 off at B = 1); the others are double. W6's u is the same bits in
# every system (exact adds and multiplies in one order): only the final sum's order differs (Octave's
# sequential sum is 1.1e-13 off NumPy's pairwise one at n = 4096).
# W7: exp's last bits and the sums' orders differ between systems (1e-15 apart at 1024 x 256).
TOLERANCE = {1: 1e-9, 2: 1e-4, 4: 1e-10, 5: 1e-8, 6: 1e-12, 7: 1e-10}
W3_SIGMAS = 4.0
# The values in double precision (NumPy, W2's images cast to double), for the sizes above (W6: and
# its quick size) and W5's 50 steps, made by `workload_peers.py --reference --workload W --size S`
# (remake them if the programs or the input formula change). Where one exists it is the reference of
# the check, so that a run of one system alone (Tandem's modes on the GPU machine without PyTorch)
# is checked too.
REFERENCE = {
    (1, "1000000"): 259499.62388418283,
    (1, "10000000"): 2595119.116606331,
    (1, "100000000"): 25951163.640079513,
    (2, "1"): 0.5612892603496019,
    (2, "4"): 0.5612892614853591,
    (2, "16"): 0.5612892614129537,
    (4, "1024"): 1922.4725527396145,
    (4, "2048"): 1441.435014472273,
    (4, "4096"): 2574.3752383859864,
    (4, "8192"): 32595.95838157134,
    (5, "65536x128"): 0.8403401859014891,
    (5, "262144x256"): 0.8414807801387143,
    (5, "1048576x512"): 0.841601947209877,
    (6, "256"): 16441.162662787967,
    (6, "1024"): 262151.82692685357,
    (6, "2048"): 1048589.5249884624,
    (6, "4096"): 4194359.496070093,
    (7, "1024x256"): 3073.9733427967544,
    (7, "4096x1024"): 12298.90767261781,
    (7, "16384x4096"): 49195.897273227514,
}
RATE, VOL, STRIKE, SPOT = 0.05, 0.2, 100.0, 100.0
# Systems, in the order they run and appear; a family votes once in the reference.
ORDER = ["tandem-cpu", "tandem-gpu", "tandem-auto", "eigen", "numpy", "octave", "torch_eager", "torch_compile"]
LABEL = {"tandem-cpu": "Tandem CPU", "tandem-gpu": "Tandem GPU", "tandem-auto": "Tandem auto", "eigen": "Eigen+OpenBLAS",
         "numpy": "NumPy", "octave": "Octave", "torch_eager": "PyTorch eager", "torch_compile": "torch.compile"}


def family(system):
    return system.split("-")[0].split("_")[0]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---- Black-Scholes (W3's reference) -------------------------------------------------------------

def norm_cdf(x):
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def black_scholes():
    """The call's price and the standard deviation of one discounted payoff (T = 1)."""
    d1 = (math.log(SPOT / STRIKE) + RATE + VOL ** 2 / 2) / VOL
    d2 = d1 - VOL
    price = SPOT * norm_cdf(d1) - STRIKE * math.exp(-RATE) * norm_cdf(d2)
    # E[max(S - K, 0)^2] = E[S^2; S > K] - 2 K E[S; S > K] + K^2 P(S > K)
    m2 = (SPOT ** 2 * math.exp(2 * RATE + VOL ** 2) * norm_cdf(d1 + VOL)
          - 2 * STRIKE * SPOT * math.exp(RATE) * norm_cdf(d1) + STRIKE ** 2 * norm_cdf(d2))
    mean = math.exp(RATE) * price
    return price, math.exp(-RATE) * math.sqrt(m2 - mean ** 2)


# ---- running one process ---------------------------------------------------------------------------

# Systems that run on the GPU: each warms up for at least --min-warmup-ms (a GPU that idled while
# another system ran on the CPU raises its clocks only under load; every GPU system gets the same).
GPU_SYSTEMS = ("tandem-gpu", "tandem-auto", "torch_eager", "torch_compile")

def command(args, system, w, size):
    common = ["--workload", str(w), "--size", size, "--warmup", str(args.warmup), "--reps", str(args.reps)]
    extra = {3: ["--steps", str(args.steps)], 5: ["--iters", str(args.iters)]}.get(w, [])
    if system in GPU_SYSTEMS and args.min_warmup_ms > 0:
        extra += ["--min-warmup-ms", f"{args.min_warmup_ms:g}"]
    if system.startswith("tandem-") or system == "eigen":
        sysargs = ["--system", "tandem", "--mode", system.split("-")[1]] if system != "eigen" else ["--system", "eigen"]
        return shlex.split(args.tandem_cmd) + sysargs + common + extra
    if system == "octave":
        a, _, b = size.partition("x")
        call = f"addpath('{ROOT}/bench'); workloads({w}, {a}, {b or 0}, {args.warmup}, {args.reps}, {args.steps}, {args.iters})"
        return shlex.split(args.octave) + ["--no-gui", "--quiet", "--no-window-system", "--eval", call]
    peer = [args.python, os.path.join(ROOT, "bench", "workload_peers.py"), "--system", system] + common + extra
    if system.startswith("torch"):
        peer += ["--device", args.torch_device] + (["--w3-compile", args.w3_compile] if system == "torch_compile" else [])
    return peer


def run_one(args, system, w, size, timeout):
    run = {"system": system, "workload": w, "size": size}
    cmd = command(args, system, w, size)
    run["command"] = " ".join(shlex.quote(c) for c in cmd)
    t0 = time.monotonic()
    try:
        # its own process group: a timeout ends its helpers too (torch.compile's compile workers)
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             start_new_session=True)
    except FileNotFoundError as e:
        run.update(status="skipped", message=f"cannot run {cmd[0]}: {e.strerror}", wall_s=0.0)
        return run
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        run.update(status="timeout", message=f"no result within {timeout:g} s", wall_s=time.monotonic() - t0)
        return run
    run["wall_s"] = time.monotonic() - t0
    lines = []
    for line in stdout.splitlines():
        if line.startswith("{"):
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    by_kind = {obj.get("kind"): obj for obj in lines}
    run["context"] = by_kind.get("context", {})
    res = by_kind.get("result")
    if res is not None and p.returncode == 0:
        for k in ("value", "samples_ms", "warmup_ms", "setup_ms", "steps", "iters", "compile_scope", "tandem"):
            if k in res:
                run[k] = res[k]
        run["status"] = "ok"
        run["median_ms"] = statistics.median(res["samples_ms"])
    elif "skip" in by_kind:
        run.update(status="skipped", message=by_kind["skip"]["reason"])
    else:
        msg = by_kind.get("error", {}).get("message") or f"exit status {p.returncode}"
        run.update(status="error", message=msg, stderr_tail=stderr[-2000:])
    return run


# ---- checks ----------------------------------------------------------------------------------------

def check_block(w, size, runs):
    """Sets run["check"] and run["valid"] for the runs of one (workload, size)."""
    ok = [r for r in runs if r["status"] == "ok"]
    for r in runs:
        r.pop("check", None)  # a merged report checks again
    for r in ok:
        if r["system"].startswith("tandem-") and any(m.get("regions", 1) == 0 for m in r.get("tandem", [])):
            r["check"] = {"pass": False, "why": "a timed run ran no region (a cached value was timed)"}
    if w == 3:
        price, sd = black_scholes()
        m = int(size)
        se = sd / math.sqrt(m)
        for r in ok:
            if "check" in r:
                continue
            z = (r["value"] - price) / se
            r["check"] = {"pass": abs(z) <= W3_SIGMAS, "reference": price, "standard_error": se, "z": z,
                          "why": f"Black-Scholes {price:.4f}, within {W3_SIGMAS:g} standard errors ({se:.3g})"}
    else:
        voters = {}
        for r in ok:  # one value per family: its first system in ORDER
            voters.setdefault(family(r["system"]), r["value"])
        tol = TOLERANCE[w]
        stored = REFERENCE.get((w, size)) if w != 5 or all(r.get("iters", 50) == 50 for r in ok) else None
        if stored is not None or len(voters) >= 2:
            ref = stored if stored is not None else statistics.median(voters.values())
            source = ("the stored double-precision value" if stored is not None else
                      f"the median of {len(voters)} kinds of system ({', '.join(voters)})")
            for r in ok:
                if "check" in r:
                    continue
                rel = abs(r["value"] - ref) / abs(ref) if ref else abs(r["value"])
                r["check"] = {"pass": rel <= tol, "reference": ref, "rel_diff": rel, "tolerance": tol,
                              "why": f"{source}, relative {tol:g}"}
        else:
            for r in ok:
                r.setdefault("check", {"pass": None, "why": "no other kind of system ran: unchecked"})
    for r in runs:
        r["valid"] = r["status"] == "ok" and r.get("check", {}).get("pass") is True


# ---- context ---------------------------------------------------------------------------------------

def read_first(path, key):
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def git_commit():
    # The commit of the binaries measured, when the caller knows it (run-workloads-gpu.sh: the
    # bundle's; the device machine's copy of the checkout has no history of its own).
    if os.environ.get("TANDEM_BENCH_COMMIT"):
        return os.environ["TANDEM_BENCH_COMMIT"]
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        pass
    for path in (os.path.join(ROOT, ".gpu", "COMMIT"),):
        if os.path.exists(path):
            return open(path, encoding="utf-8").read().strip() + " (from .gpu/COMMIT)"
    return "unknown (no git checkout)"


def machine_slug():
    """'amd-epyc-2c' from 'AMD EPYC' and 2 usable cores: the default file name says where it ran."""
    model = read_first("/proc/cpuinfo", "model name") or socket.gethostname().split(".")[0]
    model = re.sub(r"\((R|TM|tm|r)\)|\bCPU\b|\bProcessor\b|@.*|\b\d+-Core\b", " ", model)
    slug = "-".join(re.findall(r"[a-z0-9]+", model.lower()))
    return f"{slug or 'unknown'}-{len(os.sched_getaffinity(0))}c"


def machine_context():
    gpu = None
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        gpu = q.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        pass
    kb = (read_first("/proc/meminfo", "MemTotal") or "0 kB").split()[0]
    mem = f"{int(kb) / 2 ** 20:.0f} GiB memory"
    return {"host": socket.gethostname(), "cpu_model": read_first("/proc/cpuinfo", "model name") or platform.processor(),
            "cores": os.cpu_count(), "cores_allowed": len(os.sched_getaffinity(0)), "memory": mem, "gpu": gpu,
            "os": platform.platform(), "load_avg_at_start": list(os.getloadavg())}


# ---- the run ----------------------------------------------------------------------------------------

def parse_list(text, allowed, what):
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in allowed]
    if bad:
        raise SystemExit(f"workloads_report.py: unknown {what} {', '.join(bad)} (expected some of {', '.join(allowed)})")
    return items


def plan(args):
    workloads = [int(w) for w in parse_list(args.workloads, [str(i) for i in sorted(NAMES)], "workload")]
    modes = parse_list(args.modes, ["cpu", "gpu", "auto"], "mode")
    wanted = parse_list(args.systems, ["tandem", "eigen", "numpy", "octave", "torch", "torch_eager", "torch_compile"], "system")
    systems = []
    for s in wanted:
        systems += [f"tandem-{m}" for m in modes] if s == "tandem" else ["torch_eager", "torch_compile"] if s == "torch" else [s]
    systems = [s for s in ORDER if s in systems]
    blocks = []
    for w in workloads:
        sizes = QUICK[w] if args.quick else {"small": SIZES[w][:1], "large": SIZES[w][-1:], "ends": [SIZES[w][0], SIZES[w][-1]],
                                             "all": SIZES[w]}[args.sizes]
        blocks += [(w, s) for s in sizes]
    return blocks, systems


def cmd_run(args):
    if args.quick and args.timeout is None:
        args.timeout = 120.0
    args.timeout = args.timeout or 1800.0
    blocks, systems = plan(args)
    name = args.name or ("gpu" if "tandem-gpu" in systems else "cpu") + "-" + machine_slug() + ("-quick" if args.quick else "")
    os.makedirs(args.out, exist_ok=True)
    doc = {"schema": "tandem-workloads/1", "name": name, "complete": False,
           "context": {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                       "commit": git_commit(), "command": os.environ.get("TANDEM_BENCH_COMMAND") or " ".join(map(shlex.quote, sys.argv)),
                       "machine": machine_context(), "systems": {}},
           "settings": {"workloads": sorted({w for w, _ in blocks}), "blocks": [[w, s] for w, s in blocks], "systems": systems,
                        "reps": args.reps, "warmup": args.warmup, "min_warmup_ms": args.min_warmup_ms,
                        "steps": args.steps, "iters": args.iters,
                        "timeout_s": args.timeout, "budget_s": args.budget_s, "tolerance": TOLERANCE, "w3_sigmas": W3_SIGMAS},
           "runs": []}
    total = len(blocks) * len(systems)
    log(f"workloads: {len(blocks)} (workload, size) x {len(systems)} systems ({', '.join(systems)}); "
        f"median of {args.reps} after {args.warmup} warm-up; timeout {args.timeout:g} s a run; {name}.* in {args.out}")
    started, n, given_up = time.monotonic(), 0, {}  # (system, workload) or system -> why it is not run again
    for w, size in blocks:
        runs = []
        for system in systems:
            n += 1
            left = args.budget_s - (time.monotonic() - started) if args.budget_s else None
            why = given_up.get(system) or given_up.get((system, w))
            if why:
                run = {"system": system, "workload": w, "size": size, "status": "skipped", "message": why}
            elif left is not None and left < 5:
                run = {"system": system, "workload": w, "size": size, "status": "skipped", "message": "over the time budget (--budget-s)"}
            else:
                log(f"[{n}/{total}] W{w} {SIZE_NAME[w]}={size} {system} ...")
                run = run_one(args, system, w, size, min(args.timeout, left) if left is not None else args.timeout)
                if run["status"] == "timeout":
                    given_up[(system, w)] = "timed out at a smaller size"
                elif run["status"] == "skipped":  # the system cannot run here at all (no PyTorch, no Octave)
                    given_up[system] = run["message"]
            if run["status"] != "ok":
                log(f"    {system}: {run['status'].upper()}: {run.get('message', '')}")
                if run.get("stderr_tail"):
                    log("    " + run["stderr_tail"].strip().replace("\n", "\n    ")[-800:])
            ctx = run.get("context")
            if ctx and run["status"] == "ok":
                doc["context"]["systems"].setdefault(system, ctx)
            runs.append(run)
        check_block(w, size, runs)
        print_block(w, size, runs)
        doc["runs"] += runs
        write_json(doc, args.out, name)
    doc["complete"] = True
    doc["context"]["wall_s"] = time.monotonic() - started
    write_json(doc, args.out, name)
    return write_report([doc], args.out, name)


def print_block(w, size, runs):
    bad = [r for r in runs if r["status"] == "ok" and r["check"]["pass"] is False]
    log(f"== W{w} {NAMES[w]}, {SIZE_NAME[w]} = {size}: "
        + (f"CHECK FAILED for {', '.join(r['system'] for r in bad)}" if bad else "checked"))
    for r in runs:
        if r["status"] != "ok":
            log(f"   {r['system']:<14} {r['status']}: {r.get('message', '')}")
            continue
        c = r["check"]
        detail = f"z = {c['z']:+.2f}" if "z" in c else (f"rel diff {c['rel_diff']:.1e}" if "rel_diff" in c else c["why"])
        if c["pass"] is False:
            log(f"   {r['system']:<14} CHECK FAILED: value {r['value']:.12g} ({detail}; {c['why']}); its time is not valid")
        else:
            log(f"   {r['system']:<14} {r['median_ms']:10.2f} ms  value {r['value']:.12g} ({detail})")


def write_json(doc, out, name):
    path = os.path.join(out, name + ".json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


# ---- the report ---------------------------------------------------------------------------------------

def size_label(w, size):
    def short(v):
        v = int(v)
        for div, suffix in ((10 ** 6, "M"), (10 ** 3, "k")):
            if v >= div and v % div == 0:
                return f"{v // div}{suffix}"
        return str(v)
    if w in (5, 7):
        n, d = size.split("x")
        return f"{short(n)}x{d}"
    return f"{SIZE_NAME[w]}={short(size)}"


def cell(r):
    if r is None:
        return ""
    if r["status"] != "ok":
        return {"timeout": "timeout", "error": "error", "skipped": "skipped"}[r["status"]]
    if r["check"]["pass"] is False:
        return "FAILED check"
    text = f"{r['median_ms']:.3g}" if r["median_ms"] < 100 else f"{r['median_ms']:.0f}"
    s = r["samples_ms"]
    if (max(s) - min(s)) / r["median_ms"] > 0.25:
        text += " ~"
    if r["check"]["pass"] is None:
        text += " ?"
    fb = sum(m.get("device_fallbacks", 0) for m in r.get("tandem", []))
    if fb or (r["system"] == "tandem-gpu" and not any(m.get("device_regions", 0) for m in r.get("tandem", []))):
        text += " !"
    return text


def table_rows(runs):
    """{(w, size): {system: run}} in order, and the systems present."""
    rows, present = {}, set()
    for r in runs:
        rows.setdefault((r["workload"], r["size"]), {})[r["system"]] = r
        present.add(r["system"])
    keys = sorted(rows, key=lambda k: (k[0], [int(x) for x in k[1].split("x")]))
    measured = {r["system"] for r in runs if r["status"] == "ok"}
    return [(k, rows[k]) for k in keys], [s for s in ORDER if s in measured]


def ratio(base, r):
    if not base or not r or not base.get("valid") or not r.get("valid"):
        return None
    return base["median_ms"] / r["median_ms"]


def write_report(docs, out, name):
    runs = [r for d in docs for r in d["runs"]]
    rows, systems = table_rows(runs)
    ctx = docs[0]["context"]
    m = ctx["machine"]
    lines = [f"# Tandem workloads: {name}", "",
             f"- date {ctx['date']}, commit {ctx['commit']}",
             f"- machine: {m['cpu_model']}, {m['cores_allowed']} of {m['cores']} cores, {m.get('memory')}, GPU: {m.get('gpu') or 'none'}"
             f" (load average {', '.join(f'{v:.2f}' for v in m['load_avg_at_start'])} at the start)",
             "- command: " + (" then ".join(f"`{c}`" for c in ctx["commands"]) + ", merged by `bench/workloads_report.py report`"
                              if ctx.get("commands") else f"`{ctx['command']}`")]
    for s, c in sorted(ctx["systems"].items(), key=lambda kv: ORDER.index(kv[0]) if kv[0] in ORDER else 99):
        info = {k: v for k, v in c.items() if k not in ("kind", "system")}
        lines.append(f"- {LABEL.get(s, s)}: " + ", ".join(f"{k} {v}" for k, v in info.items()))
        if "llvmpipe" in str(c.get("device", "")) or "lavapipe" in str(c.get("device", "")):
            lines.append(f"- **{LABEL.get(s, s)} ran on Mesa lavapipe, a Vulkan driver on the CPU: its results are checked, "
                         "its times say nothing about a GPU.**")
    st = docs[0]["settings"]
    gpu_warm = (f", GPU systems warming up for {st['min_warmup_ms'] / 1e3:g} s after their first run (at most 100 runs)"
                if st.get("min_warmup_ms") and any(s in GPU_SYSTEMS for s in systems) else "")
    lines += ["", f"Median wall time in ms of {st['reps']} runs after {st['warmup']} warm-up{gpu_warm} (steady state; device work "
              "synchronised: Tandem gathers the scalar result, PyTorch synchronises). `~`: the runs spread by more than 25%; "
              "`?`: no other kind of system to check against; `!`: a Tandem GPU run fell back to the CPU or (forced GPU) ran "
              "nothing on the device. FAILED check: the value disagreed with the others (see Checks), its time is not shown.", ""]
    head = "| workload | size | " + " | ".join(LABEL[s] for s in systems) + " |"
    lines += [head, "|" + " --- |" * (2 + len(systems))]
    for (w, size), by in rows:
        lines.append(f"| W{w} {NAMES[w]} | {size_label(w, size)} | " + " | ".join(cell(by.get(s)) for s in systems) + " |")
    png_rows = {}
    for base in ("numpy", "torch_compile"):
        if base not in systems:
            continue
        others = [s for s in systems if s != base]
        lines += ["", f"Speed-up over {LABEL[base]} ({LABEL[base]} time / system time; above 1: faster than {LABEL[base]}):", "",
                  "| workload | size | " + " | ".join(LABEL[s] for s in others) + " |", "|" + " --- |" * (2 + len(others))]
        for (w, size), by in rows:
            vals = [ratio(by.get(base), by.get(s)) for s in others]
            png_rows.setdefault(base, []).append((f"W{w} {size_label(w, size)}", dict(zip(others, vals))))
            lines.append(f"| W{w} | {size_label(w, size)} | " + " | ".join(f"{v:.2f}x" if v else "" for v in vals) + " |")
    lines += ["", "## Checks", ""]
    for (w, size), by in rows:
        checked = [r for r in by.values() if r["status"] == "ok"]
        if not checked:
            continue
        why = checked[0]["check"]["why"]
        fails = [r for r in checked if r["check"]["pass"] is False]
        vals = ", ".join(f"{LABEL.get(r['system'], r['system'])} {r['value']:.10g}" for r in checked)
        lines.append(f"- W{w} {size_label(w, size)}: {'**FAILED** for ' + ', '.join(r['system'] for r in fails) if fails else 'ok'}"
                     f" ({why}): {vals}")
    problems = {}
    for r in runs:
        if r["status"] != "ok":
            problems.setdefault((r["system"], r["status"], r.get("message", "")), []).append(
                f"W{r['workload']} {size_label(r['workload'], r['size'])}")
    if problems:
        lines += ["", "## Not measured", ""]
        lines += [f"- {LABEL.get(s, s)}, {status}: {msg} ({', '.join(where)})" for (s, status, msg), where in problems.items()]
    lines += ["", "## The programs", "",
              "W1 `y = sin(x).*x + 0.5; z = exp(-y.^2) ./ (1 + abs(x)); s = sum(z)`, x n x 1 double. "
              "W2 2160 x 3840 x B single images: per image mu (mean over dims 1-2) and sigma (rms of imgs - mu), "
              "`out = min(max((imgs - mu) ./ (sigma + 1e-6) * 0.25 + 0.5, 0) .^ 0.8, 1)`, the mean of out. "
              "W3 single-precision geometric Brownian motion, M paths, 256 steps of `S = S .* exp(drift + vol*randn(M, 1))` "
              "(randn timed), `exp(-r) * mean(max(S - 100, 0))` against Black-Scholes 10.4506. "
              "W4 `S = sum(A .* B, 2); r = S' * S`, n x n double. "
              "W5 PCA by 50 power-iteration steps on `G = Xc'*Xc/(n-1)`, X n x d double. "
              "W6 100 heat steps `u = u + 0.1 * (circshift(u, 1, 1) + circshift(u, -1, 1) + circshift(u, 1, 2) + "
              "circshift(u, -1, 2) - 4 * u)`, then `sum(u(:) .^ 2)`, u n x n double. "
              "W7 softmax of each row, `E = exp(X - max(X, [], 2)); P = E ./ sum(E, 2); sum(P(:) .* X(:))`, X n x d "
              "double. Inputs: an exact formula every "
              "system computes (bench/workloads.cpp). Sources: bench/workloads.cpp (Tandem, Eigen), bench/workload_peers.py "
              "(NumPy, PyTorch), bench/workloads.m (Octave); driver and report: bench/workloads_report.py. Threads: Tandem uses "
              "its CPU executor's (all cores); NumPy's and Octave's elementwise ops and Eigen's expressions run on one "
              "thread, their matrix products on OpenBLAS's threads; Eigen's W3 draws with std::mt19937 (Eigen has no "
              "random numbers).", ""]
    md = os.path.join(out, name + ".md")
    with open(md, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    log(f"workloads: wrote {md}")
    print("\n".join(lines[lines.index(head):]).split("\n## ")[0])
    write_png(png_rows, rows, systems, out, name)
    bad = [r for r in runs if r["status"] == "ok" and r["check"]["pass"] is False]
    if bad:
        log(f"workloads: CHECK FAILED for {len(bad)} result(s): " + ", ".join(f"W{r['workload']} {r['size']} {r['system']}" for r in bad))
        return 2
    return 0


def write_png(png_rows, rows, systems, out, name):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker  # noqa: F401 - used as matplotlib.ticker
    except ImportError as e:
        log(f"workloads: no chart ({e}); `bench/workloads_report.py report {name}.json` re-makes it where matplotlib is")
        return
    panels = list(png_rows.items())
    if not panels:  # no baseline: plot the times themselves
        panels = [(None, [(f"W{w} {size_label(w, s)}", {k: by[k]["median_ms"] if by.get(k, {}).get("valid") else None
                                                          for k in systems}) for (w, s), by in rows])]
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(8, 1.1 * len(rows) + 3), 4.2 * len(panels)), squeeze=False)
    for ax, (base, data) in zip(axes[:, 0], panels):
        labels = [lbl for lbl, _ in data]
        series = [s for s in systems if s != base and any(v.get(s) for _, v in data)]
        width = 0.8 / max(1, len(series))
        for i, s in enumerate(series):
            xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(data))]
            ys = [v.get(s) or 0 for _, v in data]
            bars = ax.bar(xs, ys, width, label=LABEL[s])
            ax.bar_label(bars, labels=[f"{y:.2g}" if y else "" for y in ys], fontsize=6, padding=1)
        ax.set_yscale("log")
        # plain numbers on the log axis (0.5, 1, 2, 5 ...), not powers of ten
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.margins(y=0.15)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
        if base:
            ax.axhline(1.0, color="black", linewidth=0.8)
            ax.set_ylabel(f"speed-up over {LABEL[base]}")
            ax.set_title(f"{name}: {LABEL[base]} time / system time (higher is faster; missing bar: not run or check failed)",
                         fontsize=9)
        else:
            ax.set_ylabel("median ms (lower is faster)")
            ax.set_title(f"{name}: median time", fontsize=9)
        ax.legend(fontsize=7, ncol=min(4, max(1, len(series))))
        ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    path = os.path.join(out, name + ".png")
    fig.savefig(path, dpi=110)
    log(f"workloads: wrote {path}")


def cmd_report(args):
    docs = []
    for path in args.files:
        with open(path, encoding="utf-8") as f:
            docs.append(json.load(f))
    name = args.name or docs[0]["name"]
    out = args.out or os.path.dirname(os.path.abspath(args.files[0]))
    os.makedirs(out, exist_ok=True)
    if len(docs) > 1:  # merged: the later files' runs replace the earlier ones' of the same key
        merged, seen = dict(docs[0]), {}
        merged["context"] = dict(docs[0]["context"])
        merged["context"]["commands"] = [d["context"]["command"] for d in docs]
        merged["settings"] = dict(docs[0]["settings"])
        merged["settings"]["workloads"] = sorted({w for d in docs for w in d["settings"]["workloads"]})
        merged["settings"]["blocks"] = [b for d in docs for b in d["settings"]["blocks"]]
        for d in docs:
            for r in d["runs"]:
                seen[(r["workload"], r["size"], r["system"])] = r
            merged["context"]["systems"].update(d["context"]["systems"])
        merged["runs"] = list(seen.values())
        blocks = {}
        for r in merged["runs"]:
            blocks.setdefault((r["workload"], r["size"]), []).append(r)
        for (w, size), rs in blocks.items():
            check_block(w, size, rs)
        merged["name"] = name
        write_json(merged, out, name)
        docs = [merged]
    return write_report(docs, out, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run, check, write JSON + markdown + PNG")
    r.add_argument("--quick", action="store_true", help="one small size per workload (under a minute on 2 cores)")
    r.add_argument("--sizes", choices=["small", "large", "ends", "all"], default="ends",
                   help="the issue's smallest, largest, both (default) or every size")
    r.add_argument("--workloads", default="1,2,3,4,5,6,7")
    r.add_argument("--systems", default="tandem,eigen,numpy,octave,torch")
    r.add_argument("--modes", default="cpu", help="Tandem's placements: cpu, gpu (forced), auto")
    r.add_argument("--reps", type=int, default=5)
    r.add_argument("--warmup", type=int, default=1)
    r.add_argument("--min-warmup-ms", type=float, default=1000.0,
                   help="GPU systems: warm-up runs after the first continue until they took this long "
                        "(at most 100 runs; default 1000)")
    r.add_argument("--steps", type=int, default=256, help="W3's time steps")
    r.add_argument("--iters", type=int, default=50, help="W5's power-iteration steps")
    r.add_argument("--w3-compile", choices=["whole", "step"], default="step", help="torch.compile's scope for W3")
    r.add_argument("--torch-device", default="cuda", help="PyTorch's device (cpu: PyTorch as a CPU peer)")
    r.add_argument("--out", default=os.path.join(ROOT, "docs", "workloads"))
    r.add_argument("--name", help="file stem (default cpu-<cpu model>-<cores>c, gpu-... with --modes gpu, -quick with --quick)")
    r.add_argument("--tandem-cmd", default=os.path.join(ROOT, "build", "bench", "tandem-workloads"),
                   help="how to start tandem-workloads (a command line)")
    r.add_argument("--python", default=sys.executable, help="the Python of NumPy / PyTorch")
    r.add_argument("--octave", default="octave-cli")
    r.add_argument("--timeout", type=float, help="seconds a run may take (default 1800, 120 with --quick)")
    r.add_argument("--budget-s", type=float, help="stop starting runs after this many seconds (the rest: skipped)")
    p = sub.add_parser("report", help="re-make the markdown and the chart from JSON files (merged)")
    p.add_argument("files", nargs="+")
    p.add_argument("--out")
    p.add_argument("--name")
    args = ap.parse_args()
    if args.cmd == "run" and (args.reps < 5 or args.warmup < 1):
        log("workloads: note: fewer than 5 runs or no warm-up is not the steady state the report claims")
    return cmd_run(args) if args.cmd == "run" else cmd_report(args)


if __name__ == "__main__":
    sys.exit(main())
