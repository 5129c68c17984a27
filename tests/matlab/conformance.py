#!/usr/bin/env python3
"""MATLAB conformance suite: Tandem's interpreter against GNU Octave.

Runs every case of tests/matlab/conformance_cases.txt through GNU Octave once
(one generated script, each case wrapped in try/catch between marker lines)
to get the expected output, then through `tandem eval CODE` once per case, and
compares the printed lines: the same number of lines; a line that is a number
on both sides (decimal, Inf, -Inf, NaN, as MATLAB's fprintf prints them)
compares within the case's relative tolerance (NaN equals NaN, an infinity
must match exactly, 0 equals -0, tolerance 0 means the same double); any other
line compares as a stripped string.

CI runs, from the repository root:
    python3 tests/matlab/conformance.py --tandem build/tandem --env TANDEM_DEVICE=cpu
    python3 tests/matlab/conformance.py --tandem build/tandem \
        --env TANDEM_DEVICE=vulkan --env TANDEM_PLACEMENT=gpu
Without Octave on the machine, use expected values saved where it is:
    python3 tests/matlab/conformance.py --save-expected expected.json
    python3 tests/matlab/conformance.py --tandem build/tandem --expected expected.json

Exit status: 0 when every case passes (or, with --save-expected and no
--tandem, when every case ran in Octave without error), 1 when any fails or a
case errors in Octave (a defect of the case file), 2 on a usage error.

Cases must mean the same in MATLAB and Octave. The runner rejects code with
Octave-only syntax (double quotes, #, !, ++ and +=, endif and the like,
indexing a call's result) or a statement without a semicolon (Octave's display
format is not MATLAB's). Differences kept out of the case file on purpose:
`for v = zeros(0,3)` (MATLAB runs the body once per column, Octave 7 not at
all), deleting from a matrix by linear index `A([1 2]) = []` (MATLAB gives a
row, Octave 7 a column), sprintf('%d', 2.5) (MATLAB switches to %e, Octave
prints 2.5), disp('') (MATLAB prints nothing, Octave an empty line), fprintf
of an empty array, mod(2, 2 - 2*eps) (0 in MATLAB's documentation, 4.4e-16 in
Octave 7: their rounding of a quotient near an integer differs at the edge;
mod(0.3, 0.1) is 0 in both), chained indexing `f(x)(2)` and `[1 2](1)` (Octave only),
and results whose MATLAB shape we could not confirm: max(zeros(0,3)), the
loop variable after `for k = 1:0`, mean([]).
"""

import argparse
import fnmatch
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CASES = os.path.join(HERE, "conformance_cases.txt")
TANDEM_TIMEOUT_S = 60
MARK = "@@tandem-conformance"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
NUMBER_RE = re.compile(
    r"^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|Inf|NaN)$")


class UsageError(Exception):
    pass


class Case:
    def __init__(self, name, tol, code, line):
        self.name = name
        self.tol = tol
        self.code = code
        self.line = line


def parse_cases(path):
    """Reads the case file: blocks of '%% case: NAME', '%% tol: X', code."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        raise UsageError("cannot read cases file %s: %s" % (path, e))
    cases = []
    current = None
    body = []

    def finish():
        if current is None:
            return
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        if current.tol is None:
            raise UsageError("%s:%d: case %s has no '%%%% tol:' line"
                             % (path, current.line, current.name))
        if not body:
            raise UsageError("%s:%d: case %s has no code"
                             % (path, current.line, current.name))
        current.code = "\n".join(body) + "\n"
        cases.append(current)

    for number, text in enumerate(lines, 1):
        m = re.match(r"^%%\s*case:\s*(\S*)\s*$", text)
        if m:
            finish()
            body = []
            name = m.group(1)
            if not NAME_RE.match(name):
                raise UsageError("%s:%d: bad case name %r" % (path, number, name))
            current = Case(name, None, None, number)
            continue
        m = re.match(r"^%%\s*tol:\s*(\S+)\s*$", text)
        if m and current is not None and current.tol is None and not body:
            try:
                tol = float(m.group(1))
            except ValueError:
                tol = -1.0
            if not (tol >= 0 and math.isfinite(tol)):
                raise UsageError("%s:%d: bad tolerance %r" % (path, number, m.group(1)))
            current.tol = tol
            continue
        if current is not None:
            if text.startswith("%%") and not body and current.tol is None:
                raise UsageError("%s:%d: expected '%%%% tol:' after the case line"
                                 % (path, number))
            body.append(text.rstrip())
    finish()
    seen = set()
    for c in cases:
        if c.name in seen:
            raise UsageError("%s:%d: duplicate case name %s" % (path, c.line, c.name))
        seen.add(c.name)
    if not cases:
        raise UsageError("%s: no cases" % path)
    return cases


def output_lines(text):
    """A program's stdout as a list of lines (a final newline ends the last)."""
    text = text.replace("\r\n", "\n")
    if text.endswith("\n"):
        text = text[:-1]
    return [] if text == "" else text.split("\n")


def matlab_string(text):
    """A MATLAB expression whose value is the char row `text` (newlines too)."""
    parts = ["'" + piece.replace("'", "''") + "'" for piece in text.split("\n")]
    return "[" + " char(10) ".join(parts) + "]"


def octave_script(cases):
    # Octave-only syntax is caught by lint() instead of Octave's
    # language-extension warning, which Octave's own library code trips.
    out = ["more off;", "warning('off', 'Octave:language-extension');",
           "warning('off', 'Octave:num-to-str');"]
    for c in cases:
        out.append("clear all;")
        out.append("lastwarn('');")
        out.append("fprintf('%s case %s\\n');" % (MARK, c.name))
        out.append("try")
        out.append("  eval(%s);" % matlab_string(c.code))
        out.append("  fprintf('\\n%s end %s\\n');" % (MARK, c.name))
        out.append("catch tandem_conformance_err")
        out.append("  fprintf('\\n%s error %s %%s\\n', "
                   "strrep(tandem_conformance_err.message, char(10), ' '));"
                   % (MARK, c.name))
        out.append("end")
        out.append("if ~isempty(lastwarn())")
        out.append("  fprintf('%s warning %s %%s\\n', "
                   "strrep(lastwarn(), char(10), ' '));" % (MARK, c.name))
        out.append("end")
    out.append("fprintf('%s done\\n');" % MARK)
    return "\n".join(out) + "\n"


def run_octave(octave, cases):
    """Returns ({name: lines}, {name: error}, {name: warning}) from one Octave run."""
    with tempfile.TemporaryDirectory(prefix="tandem-conformance-") as tmp:
        script = os.path.join(tmp, "tandem_conformance_cases.m")
        with open(script, "w", encoding="utf-8") as f:
            f.write(octave_script(cases))
        cmd = shlex.split(octave) + ["--norc", "--quiet", "--no-history", script]
        try:
            proc = subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                  timeout=60 + 5 * len(cases))
        except FileNotFoundError:
            raise UsageError("cannot run Octave: %s" % octave)
        except subprocess.TimeoutExpired:
            raise UsageError("Octave timed out")
    stdout = proc.stdout.decode("utf-8", "replace")
    if (MARK + " done\n") not in stdout:
        sys.stderr.write(proc.stderr.decode("utf-8", "replace"))
        raise UsageError("Octave did not finish the generated script (status %d)"
                         % proc.returncode)
    expected, errors, warnings = {}, {}, {}
    pos = 0
    for c in cases:
        start = "%s case %s\n" % (MARK, c.name)
        i = stdout.find(start, pos)
        if i < 0:
            errors[c.name] = "no output marker from Octave"
            continue
        i += len(start)
        end_mark = "\n%s end %s\n" % (MARK, c.name)
        err_mark = "\n%s error %s " % (MARK, c.name)
        j_end = stdout.find(end_mark, i)
        j_err = stdout.find(err_mark, i)
        if j_err >= 0 and (j_end < 0 or j_err < j_end):
            k = stdout.find("\n", j_err + len(err_mark))
            errors[c.name] = stdout[j_err + len(err_mark):k]
            pos = k
        elif j_end >= 0:
            expected[c.name] = output_lines(stdout[i:j_end])
            pos = j_end + len(end_mark)
        else:
            errors[c.name] = "no end marker from Octave"
            continue
        warn_mark = "%s warning %s " % (MARK, c.name)
        if stdout.startswith(warn_mark, pos):
            k = stdout.find("\n", pos)
            warnings[c.name] = stdout[pos + len(warn_mark):k]
            pos = k + 1
    return expected, errors, warnings


OCTAVE_ONLY = [
    (re.compile(r'"'), 'double-quoted string'),
    (re.compile(r'#'), "'#' comment"),
    (re.compile(r'!'), "'!' operator"),
    (re.compile(r'\+\+|\+=|-=|\*=|/=|\^=|\*\*'), 'C-style operator'),
    (re.compile(r'\b(?:endif|endfor|endwhile|endswitch|endfunction|end_try_catch|'
                r'end_unwind_protect|unwind_protect|do|until|printf|puts)\b'),
     'Octave-only keyword or function'),
    (re.compile(r'[)\]]\('), 'indexing the result of a call or literal'),
]


def strip_strings_and_comments(line):
    """The line with char literals blanked and any comment removed."""
    out = []
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "%":
            break
        prev = line[i - 1] if i > 0 else ""
        if ch == "'" and not (prev.isalnum() or prev in "_)]}.'"):
            j = i + 1
            while j < len(line):
                if line.startswith("''", j):
                    j += 2
                elif line[j] == "'":
                    break
                else:
                    j += 1
            out.append("''")
            i = j + 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


CONTROL_LINE = re.compile(
    r'^(?:if|elseif|else|end|for|while|switch|case|otherwise|try|catch|break|'
    r'continue)\b')


def lint(case):
    """A reason when the case's code uses syntax that MATLAB does not have,
    or a statement whose value Octave would display (its format is not
    MATLAB's: every statement must end in a semicolon)."""
    depth = 0
    for k, line in enumerate(case.code.split("\n"), 1):
        bare = strip_strings_and_comments(line).strip()
        # An anonymous function's parameter list may be followed by '('.
        text = re.sub(r'@\([^()]*\)', '@', bare)
        for pattern, what in OCTAVE_ONLY:
            if pattern.search(text):
                return "code line %d uses Octave-only syntax (%s): %s" % (k, what, line.strip())
        opened = depth
        depth += sum(bare.count(c) for c in "([{") - sum(bare.count(c) for c in ")]}")
        if (bare and depth <= 0 and opened <= 0 and not bare.endswith(";")
                and not CONTROL_LINE.match(bare) and not re.search(r'\bend$', bare)):
            return "code line %d does not end in a semicolon: %s" % (k, line.strip())
    return None


def parse_number(text):
    s = text.strip()
    if not NUMBER_RE.match(s):
        return None
    return float(s)


def lines_equal(got, want, tol):
    a, b = parse_number(got), parse_number(want)
    if a is None or b is None:
        return got.strip() == want.strip()
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    if tol == 0:
        return a == b
    return abs(a - b) <= tol * max(abs(a), abs(b))


def compare(got, want, tol):
    """None when equal, else (line number, tandem's line, octave's line)."""
    for k in range(max(len(got), len(want))):
        g = got[k] if k < len(got) else None
        w = want[k] if k < len(want) else None
        if g is None or w is None or not lines_equal(g, w, tol):
            return k + 1, g, w
    return None


def run_tandem(tandem_cmd, env, case):
    """Returns (lines, None) or (None, reason)."""
    try:
        proc = subprocess.run(tandem_cmd + ["eval", case.code], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, timeout=TANDEM_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % TANDEM_TIMEOUT_S
    except OSError as e:
        return None, "cannot run %s: %s" % (tandem_cmd[0], e)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().split("\n")
        return None, "exit status %d: %s" % (proc.returncode, err[-1] if err else "")
    return output_lines(proc.stdout.decode("utf-8", "replace")), None


def show(line):
    return "<no line>" if line is None else repr(line)


def main(argv):
    ap = argparse.ArgumentParser(
        description="Compare Tandem's MATLAB interpreter with GNU Octave.")
    ap.add_argument("--tandem", help="the tandem executable (may carry arguments "
                    "before 'eval', split like a shell would)")
    ap.add_argument("--cases", default=DEFAULT_CASES, help="the case file")
    ap.add_argument("--octave", default="octave-cli", help="the Octave executable")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="environment setting for Tandem (repeatable)")
    ap.add_argument("--expected", metavar="FILE",
                    help="read expected output from FILE instead of running Octave")
    ap.add_argument("--save-expected", metavar="FILE",
                    help="write Octave's output for the cases to FILE (JSON)")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="run only cases with this name or shell pattern (repeatable)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="Tandem processes at a time (default 1)")
    ap.add_argument("--verbose", action="store_true", help="print every case")
    args = ap.parse_args(argv)

    try:
        if not args.tandem and not args.save_expected:
            raise UsageError("give --tandem (and/or --save-expected)")
        if args.expected and args.save_expected:
            raise UsageError("--expected and --save-expected exclude each other")
        if args.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        env = dict(os.environ)
        for item in args.env:
            key, eq, value = item.partition("=")
            if not eq or not key:
                raise UsageError("--env wants KEY=VALUE, got %r" % item)
            env[key] = value
        tandem_cmd = shlex.split(args.tandem) if args.tandem else None
        if tandem_cmd == []:
            raise UsageError("empty --tandem")
        if tandem_cmd and not shutil.which(tandem_cmd[0]):
            raise UsageError("--tandem %s is not an executable" % tandem_cmd[0])

        cases = parse_cases(args.cases)
        if args.only:
            picked = [c for c in cases
                      if any(fnmatch.fnmatchcase(c.name, p) for p in args.only)]
            for p in args.only:
                if not any(fnmatch.fnmatchcase(c.name, p) for c in cases):
                    raise UsageError("--only %s matches no case" % p)
            cases = picked

        failed = set()
        for c in cases:
            reason = lint(c)
            if reason:
                print("CASE ERROR %s: %s" % (c.name, reason))
                failed.add(c.name)
        if args.expected:
            try:
                with open(args.expected, encoding="utf-8") as f:
                    saved = json.load(f)["cases"]
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise UsageError("cannot read %s: %s" % (args.expected, e))
            expected = {}
            for c in cases:
                entry = saved.get(c.name)
                if entry is None or entry.get("code") != c.code:
                    print("FAIL %s: %s has no output for this case's current code; "
                          "regenerate it with --save-expected" % (c.name, args.expected))
                    failed.add(c.name)
                else:
                    expected[c.name] = entry["lines"]
        else:
            expected, errors, warnings = run_octave(args.octave, cases)
            for c in cases:
                if c.name in warnings:
                    print("WARNING %s: Octave warns: %s" % (c.name, warnings[c.name]))
                if c.name in errors:
                    print("CASE ERROR %s: fails in Octave: %s" % (c.name, errors[c.name]))
                    failed.add(c.name)
            if args.save_expected:
                version = subprocess.run(
                    shlex.split(args.octave) + ["--version"], stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL).stdout.decode("utf-8", "replace")
                doc = {"octave": version.split("\n")[0].strip(),
                       "cases": {c.name: {"tol": c.tol, "code": c.code,
                                          "lines": expected[c.name]}
                                 for c in cases if c.name in expected}}
                with open(args.save_expected, "w", encoding="utf-8") as f:
                    json.dump(doc, f, indent=1, sort_keys=True)
                    f.write("\n")
                print("conformance: saved Octave's output for %d of %d cases to %s"
                      % (len(doc["cases"]), len(cases), args.save_expected))
    except UsageError as e:
        print("conformance: %s" % e, file=sys.stderr)
        return 2

    if not tandem_cmd:
        return 1 if failed else 0

    todo = [c for c in cases if c.name in expected]

    def one(case):
        got, reason = run_tandem(tandem_cmd, env, case)
        return case, got, reason

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for case, got, reason in pool.map(one, todo):
            if reason is not None:
                print("FAIL %s: tandem %s" % (case.name, reason))
                failed.add(case.name)
                continue
            diff = compare(got, expected[case.name], case.tol)
            if diff is not None:
                k, g, w = diff
                print("FAIL %s: line %d: tandem %s, octave %s (tol %g; %d lines vs %d)"
                      % (case.name, k, show(g), show(w), case.tol,
                         len(got), len(expected[case.name])))
                failed.add(case.name)
            elif args.verbose:
                print("pass %s" % case.name)
    sys.stdout.flush()
    print("conformance: %d of %d cases pass" % (len(cases) - len(failed), len(cases)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
