#!/usr/bin/env python3
"""Runs every command the README shows, in order, and checks it prints what the README shows.

In README.md, a fenced ```console block holds commands, each on a line starting with "$ ", each
followed by the output it prints. The runner executes the commands one after another with bash, in
a scratch folder that holds links to the repository's build/, scripts/, tests/ and data/ (so a
command that writes machine.json writes it there, not into the clone), with a clean environment
(PATH=/usr/bin:/bin, HOME set to the scratch folder: what a newcomer's shell carries does not leak
in, and nothing one command exports reaches the next).

What counts as printing what the README shows:
  - the shown lines must appear in the output in order, each one equal to a whole output line
    (trailing blanks ignored); a line "..." stands for any number of output lines, so an excerpt
    is written as "...", the lines shown, "...";
  - without a "..." line, the output must be exactly the lines shown;
  - a shown line ending in " …" (one character, U+2026) stands for an output line that starts with
    the text before it (a long line cut to fit the page);
  - a command with no lines shown only has to exit as expected.
The exit code must be 0, or what a trailing "# exit N" comment on the command says (N may be a
list: "# exit 0|1|2" for a check of the machine the runner happens to run on).
The set-up commands themselves (scripts/build.sh, scripts/test.sh) are not run again: CI runs them.

Usage: readme_test.py --readme README.md --root REPO --build BUILD_DIR [--fix]
--fix rewrites the README's shown lines to what the commands print now, keeping the excerpt each
example shows: a shown line found in the output stays, one the output only starts with gets " …",
gaps get "...", and a shown line the output no longer has is dropped (and named on stderr).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SETUP = ("scripts/build.sh", "scripts/test.sh", "scripts/deps.sh")


def examples(text):
    """Yields (line number, command, expected exits, shown lines) from ```console blocks."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```console":
            i += 1
            continue
        i += 1
        current = None
        while i < len(lines) and lines[i].strip() != "```":
            line = lines[i]
            if line.startswith("$ "):
                if current:
                    yield current
                cmd = line[2:]
                exits = [0]
                m = re.search(r"\s+#\s*exit\s+([0-9|]+)\s*$", cmd)
                if m:
                    exits = [int(x) for x in m.group(1).split("|")]
                current = (i + 1, cmd, exits, [])
            elif current:
                current[3].append(line.rstrip())
            i += 1
        if current:
            yield current
        i += 1


def same(want, got):
    if want.endswith(" \u2026"):
        return got.startswith(want[:-2])
    return want == got


def matches(shown, out):
    if not shown:
        return True, ""
    if "..." not in shown:
        ok = len(shown) == len(out) and all(same(w, g) for w, g in zip(shown, out))
        return ok, "the output must be exactly the lines shown"
    at = 0
    for want in shown:
        if want == "...":
            continue
        while at < len(out) and not same(want, out[at]):
            at += 1
        if at == len(out):
            return False, f"not found in order: {want!r}"
        at += 1
    if shown[-1] != "..." and out and not same(shown[-1], out[-1]):
        return False, f"the output must end with {shown[-1]!r}"
    if shown[0] != "..." and out and not same(shown[0], out[0]):
        return False, f"the output must start with {shown[0]!r}"
    return True, ""


def rewrite(path, text, fixes):
    lines = text.split("\n")
    for lineno in sorted(fixes, reverse=True):  # 1-based line of the "$ " command
        end = lineno
        while not lines[end].startswith("$ ") and lines[end].strip() != "```":
            end += 1
        lines[lineno:end] = fixes[lineno]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def refit(shown, out):
    """The excerpt of out that shown selects (see --fix)."""
    new, at = [], 0
    for want in shown:
        if want.strip() == "...":
            continue
        key = want[:-2] if want.endswith(" \u2026") else want
        j = at
        while j < len(out) and not (out[j] == key or (key and out[j].startswith(key))):
            j += 1
        if j == len(out):
            print(f"  dropped (no longer printed): {want!r}", file=sys.stderr)
            continue
        if j > at and (new[-1:] != ["..."]):
            new.append("...")
        new.append(out[j] if out[j] == key else key + " \u2026")
        at = j + 1
    if at < len(out):
        new.append("...")
    return new


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--readme", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--fix", action="store_true")
    a = ap.parse_args()
    text = open(a.readme, encoding="utf-8").read()
    scratch = tempfile.mkdtemp(prefix="dlrig-readme-")
    try:
        for name in ("scripts", "tests", "data"):
            os.symlink(os.path.join(os.path.abspath(a.root), name), os.path.join(scratch, name))
        os.symlink(os.path.abspath(a.build), os.path.join(scratch, "build"))
        env = {"PATH": "/usr/bin:/bin", "HOME": scratch, "LANG": "C.UTF-8"}
        failures, ran, fixes = 0, 0, {}
        for lineno, cmd, exits, shown in examples(text):
            parts = [p.strip() for p in cmd.split("#")[0].split("&&")]
            run = " && ".join(p for p in parts if not p.startswith(SETUP))
            if not run:
                continue
            ran += 1
            r = subprocess.run(["bash", "-c", run], cwd=scratch, env=env, capture_output=True,
                               text=True, errors="replace", timeout=120)
            out = [l.rstrip() for l in r.stdout.splitlines()]
            ok, why = matches(shown, out)
            if a.fix and shown and not ok:
                fixes[lineno] = refit(shown, out)
                ok = True
            if r.returncode not in exits:
                ok, why = False, f"exit {r.returncode}, the README says {'|'.join(map(str, exits))}"
            if not ok:
                failures += 1
                print(f"README.md:{lineno}: $ {cmd}\n  {why}\n  --- stdout ---")
                print("\n".join("  " + l for l in out))
                print("  --- stderr ---\n" + "\n".join("  " + l for l in r.stderr.splitlines()))
        if fixes:
            rewrite(a.readme, text, fixes)
        print(f"{ran} README commands run, {failures} failed" + (f", {len(fixes)} rewritten" if fixes else ""))
        if ran == 0:
            print("no ```console block with a $ command in the README")
            return 1
        return 1 if failures else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
