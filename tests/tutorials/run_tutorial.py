#!/usr/bin/env python3
"""Runs a SOAT tutorial from its own markdown against a server, and checks every
expected output it states.

Commands. The CLI tab's ```bash blocks are extracted exactly as SOAT's
tests/tutorials-tests.sh does (v0.28.0; learnt from it, not copied): lines between
a `value="cli"` tab and its `</TabItem>`, inside ```bash … ```; joined into logical
commands by backslash continuation, heredocs (`<<EOF` … `EOF`), and quotes left open
across lines (tracking which quote is open, so an apostrophe inside "…" does not
count); comment lines dropped; a `# → NNN` (expect a failure), `# → ignore` or
`# → retry N` on its own line annotates the command being built, or else the next one.
Then, in ONE bash session (variables carry from step to step) with `set -o pipefail`
(stricter than SOAT's runner: a failing `soat` in a pipeline fails the step):
`export SOAT_BASE_URL=…` is skipped (the environment holds the test server's);
`soat login-user …` is run and its `token` kept; `soat configure [--profile X]` writes
that token to ~/.soat/config.json's profile instead of prompting; any other command
is run, retried as annotated; a failure not annotated ends the run, as SOAT's does.
Before the first step the admin user is bootstrapped (`POST /api/v1/users/bootstrap`,
201 or 409), as SOAT's run-tutorials.sh does, unless a token is given (`--token`).
The session's environment: `PATH` with the `soat` stand-in (soat.py) first,
`SOAT_BASE_URL` and `SOAT_URL` (the server), `SOAT_WEBHOOK_BASE_URL` and
`SOAT_LISTEN_PORT` (a free loopback port for `soat listen`), its own `HOME` and working
directory. Nothing else in a command is changed.

Expected outputs. A check is attached to the command it follows:
- a ```json block inside the CLI tab (under "Example output:", "Expected …:", or
  none) is the output of the last command before it;
- comment lines directly after a command (no blank line between, same block) whose
  text, without `# ` or `# → `, starts with `{` or `[` are that command's output
  (`# → { "action": "created", ... }`, a `# [` … `# ]` listing);
- after an `echo`, comment lines of the form `# NAME: value` are its output lines.
A JSON expectation may hold several values (jq's stream, one a line); the command's
stdout is read as a stream of JSON values the same way, and the two compared as lists.
The rules, the expected value on the left:
- an object: every key stated is present in the actual object and matches; keys it
  does not state may be there;
- an array (or a stream): element by element, in order, and of the same length, unless
  a bare `...`/`…` element says more may follow (then the stated ones are a prefix);
- a string with `...` or `…`: the pieces between them appear in order, the first at the
  start unless the string starts with an ellipsis, the last at the end unless it ends
  with one (`"sess_..."` is a prefix; the fake model answers what the tutorial shows);
- an id-like string (`proj_vh9qHLINTdsrAqwK`, `gen_0dR2mJk8xQ1vTbLp`: lower-case letters,
  `_`, 6+ letters and digits): a string with the same prefix up to `_` and the id shape;
- any other string: equal; a boolean: equal; `null`: null;
- a number: a number (scores and counts are the implementation's);
- a text line (`PROJECT_ID: proj_…`): some stdout line with the same words, id-like
  words by the id rule.
A failed check does not stop the run: every check is reported, and the run fails at
its end. `--waive LINE=REASON` marks the check stated at markdown line LINE as known
to fail for REASON (a tutorial whose example disagrees with its own commands): it is
still run, reported as waived, and fails the run if it passes (the waiver is stale).

Output: one line per step and per check, then a summary; `--report FILE` writes the
same as JSON. Exit 0 only when the tutorial ran to its end with every check passing.
"""

import argparse
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ANNOTATION = re.compile(r"^\s*#\s*→\s*(.*)$")
COMMENT = re.compile(r"^\s*#")
HEREDOC = re.compile(r"<<-?\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)['\"]?$")
ECHO_LINE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*: \S+$")


# ── the markdown → steps and their expected outputs ──────────────────────────────


class Step:
    def __init__(self, cmd, annotation, line):
        self.cmd, self.annotation, self.line = cmd, annotation, line
        self.expected = []  # [Expected]


class Expected:
    def __init__(self, kind, text, line, label):
        self.kind, self.text, self.line, self.label = kind, text, line, label


def extract(markdown):
    """The CLI tab's bash lines as tutorials-tests.sh's awk prints them, each with its
    line number and block number, and the CLI tab's json blocks: (lines, blocks) where
    lines = [(text, line_no, block_no)] and blocks = [(after_line_index, text, line_no, label)]."""
    lines, blocks = [], []
    in_cli = in_code = False
    in_json = None
    block = 0
    prose = ""
    for no, raw in enumerate(markdown.split("\n"), start=1):
        if in_json is not None:
            if raw == "```":
                blocks.append((len(lines), "\n".join(in_json[1]), in_json[0], in_json[2]))
                in_json = None
            else:
                in_json[1].append(raw)
            continue
        if 'value="cli"' in raw:
            in_cli = True
            continue
        if in_cli and "</TabItem>" in raw:
            in_cli = False
            continue
        if in_cli and raw == "```bash":
            in_code, block = True, block + 1
            continue
        if in_cli and raw == "```":
            in_code, prose = False, ""
            continue
        if in_code:
            lines.append((raw, no, block))
            continue
        if in_cli and raw == "```json":
            in_json = (no + 1, [], prose)
            continue
        if raw.strip() and not raw.lstrip().startswith(("<", "```", "---")):
            prose = raw.strip()
    return lines, blocks


def open_quote(text):
    """Whether `text` ends inside a quote (a backslash escapes outside '…')."""
    q, i = "", 0
    while i < len(text):
        c = text[i]
        if q in ("", '"') and c == "\\":
            i += 2
            continue
        if q == "":
            if c in ("'", '"'):
                q = c
        elif c == q:
            q = ""
        i += 1
    return q != ""


def parse(markdown):
    """The tutorial's steps, in order, each with the outputs it is expected to print."""
    lines, blocks = extract(markdown)
    steps = []
    current, current_ann, next_ann, start = "", "", "", 0
    heredoc = ""
    # The step whose output comment lines may follow: (step, block), until a blank
    # line, another command or another block.
    after = None
    pending = []  # comment lines directly after `after`'s command: [(text, line)]
    block_at = {}  # index into lines → step count before it (for json blocks)

    def flush(cmd, ann):
        nonlocal next_ann
        cmd = cmd.strip()
        if not cmd:
            return None
        if not ann and next_ann:
            ann, next_ann = next_ann, ""
        steps.append(Step(cmd, ann, start))
        return steps[-1]

    def close_output():
        nonlocal after, pending
        if after is not None and pending:
            attach_comments(after[0], pending)
        after, pending = None, []

    for index, (line, no, block) in enumerate(lines):
        block_at[index] = len(steps)
        if after is not None and after[1] != block:
            close_output()
        if heredoc:
            current += line
            if line == heredoc:
                s = flush(current, current_ann)
                current, current_ann, heredoc = "", "", ""
                close_output()
                after = (s, block) if s else None
            else:
                current += "\n"
            continue
        m = ANNOTATION.match(line)
        if m:
            hint = m.group(1).strip()
            if hint[:1] in ("{", "[") and not current and after is not None:
                pending.append((hint, no))  # an output, not an annotation
            elif current:
                current_ann = hint
            else:
                close_output()
                next_ann = hint
            continue
        if COMMENT.match(line):
            if not current and after is not None:
                pending.append((re.sub(r"^\s*#\s?", "", line), no))
            continue
        if not line:
            if current:
                if open_quote(current):
                    current += "\n"
                else:
                    s = flush(current, current_ann)
                    current, current_ann = "", ""
                    close_output()
                    after = (s, block) if s else None
            close_output()
            continue
        if not current:
            close_output()
            start = no
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        m = HEREDOC.search(current)
        if m:
            heredoc = m.group(1)
            current += "\n"
            continue
        if open_quote(current):
            current += "\n"
        else:
            s = flush(current, current_ann)
            current, current_ann = "", ""
            after = (s, block) if s else None
    if current:
        flush(current, current_ann)
    close_output()
    for at, text, no, label in blocks:
        count = block_at.get(at, len(steps))
        if count:
            steps[count - 1].expected.append(Expected("json", text, no, label))
    return steps


def attach_comments(step, comments):
    """Comment lines after a command: a JSON output, or an echo's `NAME: value` lines."""
    text = "\n".join(t for t, _ in comments).strip()
    first = comments[0][1]
    if text[:1] in ("{", "["):
        step.expected.append(Expected("json", text, first, "comment"))
    elif re.search(r"(^|[\s;|&(])echo\s", step.cmd) and all(ECHO_LINE.match(t.strip()) for t, _ in comments):
        step.expected.append(Expected("text", text, first, "comment"))


# ── expected JSON, tolerant of the tutorials' ellipses ───────────────────────────

ELIDED = "\u0000elided"


def loads_stream(text):
    """Every JSON value in `text`, in order (jq prints one after another)."""
    decoder, values, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return values
        value, i = decoder.raw_decode(text, i)
        values.append(value)


def unelide(text):
    """The tutorial's JSON with its bare `...`/`…` made valid: an elided array element
    becomes a marker, an elided object member is dropped (objects are open anyway)."""
    out, stack, i, in_string = [], [], 0, False
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
            i += 1
            continue
        if c == '"':
            in_string = True
        elif c in "[{":
            stack.append(c)
        elif c in "]}":
            stack.pop() if stack else None
        elif text.startswith("...", i) or c == "…":
            width = 3 if c == "." else 1
            if stack and stack[-1] == "[":
                out.append(json.dumps(ELIDED))
            else:
                while out and out[-1].isspace():
                    out.pop()
                if out and out[-1] == ",":
                    out.pop()
                j = i + width
                while j < len(text) and text[j].isspace():
                    j += 1
                if j < len(text) and text[j] == ",":
                    i = j + 1
                    continue
            i += width
            continue
        out.append(c)
        i += 1
    return "".join(out)


ID = re.compile(r"^([a-z]+_)[A-Za-z0-9]{6,}$")
ELLIPSIS = re.compile(r"\.\.\.|…")


def compare(expected, actual, where, failures):
    """Appends to `failures` each way `actual` misses `expected` (the module doc's rules)."""
    def fail(why):
        failures.append(f"{where or '.'}: {why}")

    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return fail(f"expected an object, got {json.dumps(actual)[:200]}")
        for k, v in expected.items():
            if k not in actual:
                fail(f"missing key {k!r}")
            else:
                compare(v, actual[k], f"{where}.{k}", failures)
    elif isinstance(expected, list):
        if not isinstance(actual, list):
            return fail(f"expected an array, got {json.dumps(actual)[:200]}")
        open_ended = ELIDED in expected
        stated = [e for e in expected if e != ELIDED]
        if len(actual) < len(stated) or (not open_ended and len(actual) != len(stated)):
            fail(f"expected {len(stated)}{'+' if open_ended else ''} elements, got {len(actual)}: {json.dumps(actual)[:400]}")
        for n, (e, a) in enumerate(zip(stated, actual)):
            compare(e, a, f"{where}[{n}]", failures)
    elif isinstance(expected, str):
        if not isinstance(actual, str):
            return fail(f"expected a string like {expected!r}, got {json.dumps(actual)[:200]}")
        if not string_matches(expected, actual):
            fail(f"expected {expected!r}, got {actual!r}")
    elif isinstance(expected, bool):
        if actual is not expected:
            fail(f"expected {json.dumps(expected)}, got {json.dumps(actual)[:200]}")
    elif isinstance(expected, (int, float)):
        if isinstance(actual, bool) or not isinstance(actual, (int, float)):
            fail(f"expected a number, got {json.dumps(actual)[:200]}")
    elif expected is None:
        if actual is not None:
            fail(f"expected null, got {json.dumps(actual)[:200]}")


def string_matches(expected, actual):
    if ELLIPSIS.search(expected):
        pieces = [p.strip() for p in ELLIPSIS.split(expected)]
        at = 0
        for n, piece in enumerate(pieces):
            if not piece:
                continue
            found = actual.find(piece, at)
            if found < 0 or (n == 0 and found != 0):
                return False
            at = found + len(piece)
        last = pieces[-1]
        return not last or actual.endswith(last)
    m = ID.match(expected)
    if m:
        return bool(ID.match(actual)) and actual.startswith(m.group(1))
    return expected == actual


def word_matches(expected, actual):
    m = ID.match(expected)
    if m:
        return bool(ID.match(actual)) and actual.startswith(m.group(1))
    return string_matches(expected, actual)


def check(exp, stdout):
    """The failures of one expectation against a command's stdout ([] when it holds)."""
    failures = []
    if exp.kind == "text":
        have = [line.split() for line in stdout.splitlines()]
        for want in exp.text.splitlines():
            words = want.split()
            if not any(len(h) == len(words) and all(word_matches(w, a) for w, a in zip(words, h)) for h in have):
                failures.append(f"no output line like {want!r} in {stdout[:400]!r}")
        return failures
    try:
        expected = loads_stream(unelide(exp.text))
    except ValueError as e:
        return [f"the tutorial's expected output is not JSON ({e}): {exp.text[:200]}"]
    try:
        actual = loads_stream(stdout)
    except ValueError as e:
        return [f"the command's output is not JSON ({e}): {stdout[:400]!r}"]
    if len(expected) == 1 and len(actual) == 1:
        compare(expected[0], actual[0], "", failures)
    else:
        compare(expected, actual, "(stream)", failures)
    return failures


# ── one bash session ─────────────────────────────────────────────────────────────


class Shell:
    """One `bash` for the whole tutorial: each command is sourced from a file with its
    stdout and stderr in files, and its status read back through a marker line."""

    def __init__(self, env, cwd, work):
        self.work, self.n = work, 0
        self.p = subprocess.Popen(
            ["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd, text=True
        )
        self.p.stdin.write("set -o pipefail\n")
        self.p.stdin.flush()

    def run(self, cmd, timeout):
        self.n += 1
        base = os.path.join(self.work, f"step{self.n}")
        with open(base + ".sh", "w", encoding="utf-8") as f:
            f.write(cmd + "\n")
        marker = f"__step_{self.n}_status__"
        self.p.stdin.write(f'{{ . {base}.sh ; }} >{base}.out 2>{base}.err </dev/null; echo "{marker} $?"\n')
        self.p.stdin.flush()
        deadline = time.monotonic() + timeout
        status = None
        while status is None:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.p.stdout], [], [], max(left, 0))
            if not ready:
                self.close()
                raise TimeoutError(f"no end within {timeout}s")
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("the bash session ended (a command exited it)")
            if line.startswith(marker):
                status = int(line.split()[1])
        read = lambda ext: open(base + ext, encoding="utf-8", errors="replace").read()  # noqa: E731
        return status, read(".out"), read(".err")

    def close(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.write("kill $(jobs -p) 2>/dev/null; exit 0\n")
                self.p.stdin.flush()
                self.p.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.p.kill()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bootstrap(base_url):
    body = json.dumps({"username": "admin", "password": "Admin1234!"}).encode()
    req = urllib.request.Request(f"{base_url}/api/v1/users/bootstrap", data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def write_profile(home, name, base_url, token):
    path = os.path.join(home, ".soat", "config.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    config = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    config[name] = {"baseUrl": base_url, "token": token}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)


class Run:
    def __init__(self, tutorial, base_url, token, waivers, timeout):
        self.tutorial, self.base_url, self.token, self.waivers, self.timeout = tutorial, base_url, token, waivers, timeout
        self.steps_run, self.checks, self.completed, self.error = 0, [], False, None

    def say(self, text):
        print(text, flush=True)

    def start(self, root):
        home, cwd, work, bindir = (os.path.join(root, d) for d in ("home", "cwd", "work", "bin"))
        for d in (home, cwd, work, bindir):
            os.makedirs(d)
        routes = os.path.join(work, "routes.json")
        with open(routes, "w", encoding="utf-8") as f:
            subprocess.run([sys.executable, os.path.join(HERE, "soat.py"), "routes"], stdout=f, check=True)
        with open(os.path.join(bindir, "soat"), "w", encoding="utf-8") as f:
            f.write(f'#!/bin/sh\nexec "{sys.executable}" "{os.path.join(HERE, "soat.py")}" "$@"\n')
        os.chmod(os.path.join(bindir, "soat"), 0o755)
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SOAT_")}
        env.update(
            PATH=bindir + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
            HOME=home,
            TMPDIR=work,
            SOAT_BASE_URL=self.base_url,
            SOAT_URL=self.base_url,
            SOAT_WEBHOOK_BASE_URL=f"http://127.0.0.1:{port}",
            SOAT_LISTEN_PORT=str(port),
            SOAT_ROUTES=routes,
        )
        if self.token:
            env["SOAT_TOKEN"] = self.token
        return Shell(env, cwd, work), home

    def go(self):
        with open(self.tutorial, encoding="utf-8") as f:
            steps = parse(f.read())
        if not steps:
            self.error = "no CLI commands in the tutorial"
            return
        self.say(f"tutorial {os.path.basename(self.tutorial)}: {len(steps)} steps, {sum(len(s.expected) for s in steps)} expected outputs")
        if not self.token:
            status = bootstrap(self.base_url)
            self.say(f"[bootstrap] POST /api/v1/users/bootstrap: {status}")
            if status not in (201, 409):
                self.error = f"bootstrap answered {status}"
                return
        root = tempfile.mkdtemp(prefix="soat-tutorial-")
        shell, home = self.start(root)
        try:
            self.run_steps(steps, shell, home)
        finally:
            shell.close()
            shutil.rmtree(root, ignore_errors=True)

    def run_steps(self, steps, shell, home):
        login_token = ""
        for n, step in enumerate(steps, start=1):
            self.steps_run = n
            head = f"[step {n}] line {step.line}: {step.cmd.splitlines()[0][:160]}"
            if re.match(r"^export\s+SOAT_BASE_URL=", step.cmd):
                self.say(f"{head}\n  skipped: SOAT_BASE_URL is {self.base_url}")
                continue
            m = re.match(r"^soat\s+configure", step.cmd)
            if m:
                p = re.search(r"--profile\s+(\S+)", step.cmd)
                profile = p.group(1) if p else "default"
                if login_token:
                    write_profile(home, profile, self.base_url, login_token)
                    self.say(f"{head}\n  profile {profile!r} written with the last login's token")
                    login_token = ""
                else:
                    self.say(f"{head}\n  skipped: no login token captured")
                continue
            ann = step.annotation
            retry = re.match(r"^retry\s+(\d+)$", ann)
            attempts = int(retry.group(1)) if retry else 1
            expect_fail = bool(re.match(r"^\d+$", ann)) or ann == "expect-fail"
            for attempt in range(1, attempts + 1):
                try:
                    status, out, err = shell.run(step.cmd, self.timeout)
                except (TimeoutError, RuntimeError) as e:
                    self.error = f"step {n} (line {step.line}): {e}"
                    self.say(f"{head}\n  FAILED: {e}")
                    return
                if status == 0 or attempt == attempts:
                    break
                time.sleep(1)
            self.say(f"{head}\n  exit {status}" + (f" after {attempt} attempts" if attempt > 1 else ""))
            for text, name in ((out, "stdout"), (err, "stderr")):
                if text.strip():
                    self.say("\n".join(f"  {name}| {l}" for l in text.rstrip("\n").splitlines()[:60]))
            if re.match(r"^soat\s+login-user", step.cmd) and status == 0:
                try:
                    login_token = json.loads(out).get("token") or ""
                except ValueError:
                    login_token = ""
            if ann == "ignore":
                pass
            elif expect_fail and status == 0:
                self.error = f"step {n} (line {step.line}) was to fail ({ann}) but succeeded"
                self.say(f"  FAILED: {self.error}")
                return
            elif not expect_fail and status != 0:
                self.error = f"step {n} (line {step.line}) failed with exit {status}"
                self.say(f"  FAILED: {self.error}")
                return
            for exp in step.expected:
                self.check(n, exp, out)
        self.completed = True

    def check(self, n, exp, out):
        failures = check(exp, out)
        waiver = self.waivers.get(exp.line)
        passed = not failures
        entry = {"step": n, "line": exp.line, "label": exp.label, "passed": passed, "failures": failures}
        if waiver is not None:
            entry.update(waived=waiver, passed=not passed)
            verdict = f"waived ({waiver}): fails as known" if not passed else f"FAILED: waived ({waiver}) but passes: drop the waiver"
        else:
            verdict = "passed" if passed else "FAILED"
        self.checks.append(entry)
        self.say(f"  check line {exp.line} ({exp.label or 'expected'}): {verdict}")
        for f in failures:
            self.say(f"    - {f}")

    def summary(self):
        failed = [c for c in self.checks if not c["passed"]]
        ok = self.completed and not failed and not self.error
        return {
            "tutorial": os.path.basename(self.tutorial),
            "completed": self.completed,
            "steps_run": self.steps_run,
            "checks": self.checks,
            "checks_failed": len(failed),
            "error": self.error,
            "passed": ok,
        }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tutorial")
    ap.add_argument("--base-url", default=os.environ.get("SOAT_BASE_URL"), required=os.environ.get("SOAT_BASE_URL") is None)
    ap.add_argument("--token", help="a token to run with instead of bootstrapping and logging in the admin")
    ap.add_argument("--waive", action="append", default=[], metavar="LINE=REASON")
    ap.add_argument("--report", help="write the summary as JSON here")
    ap.add_argument("--timeout", type=float, default=120, help="seconds one command may take")
    args = ap.parse_args(argv)
    waivers = {int(w.split("=", 1)[0]): w.split("=", 1)[1] if "=" in w else "known" for w in args.waive}
    run = Run(args.tutorial, args.base_url.rstrip("/"), args.token, waivers, args.timeout)
    run.go()
    summary = run.summary()
    checks = summary["checks"]
    print(
        f"summary: {'PASSED' if summary['passed'] else 'FAILED'}: {summary['steps_run']} steps run"
        f"{', reached the end' if summary['completed'] else ', stopped: ' + str(summary['error'])}; "
        f"{len(checks)} checks, {summary['checks_failed']} failed",
        flush=True,
    )
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
