#!/usr/bin/env python3
"""Rewrites the example outputs in README.md and docs/validation.md from the binary.

Every fenced block whose first line is `$ specsim ARGS` gets the output of `specsim ARGS`. A block
with a `...` line keeps as many lines before and after it as it had (the head and tail of a long
table). tests/cli/test_readme.cpp checks the result, so run this after a change to the model or the
reports:

    SPECSIM_BIN=build/release/bin/specsim scripts/update_examples.py
"""
import os
import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = os.environ.get("SPECSIM_BIN", str(ROOT / "build/release/bin/specsim"))


def rewrite(path):
    lines = path.read_text().split("\n")
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if not (line.startswith("```") and i < len(lines) and lines[i].startswith("$ specsim ")):
            continue
        command = lines[i]
        end = i + 1
        while not lines[end].startswith("```"):
            end += 1
        old = lines[i + 1:end]
        got = subprocess.run([BIN, *command[len("$ specsim "):].split()], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.rstrip("\n").split("\n")
        if "..." in old:
            head = old.index("...")
            tail = len(old) - head - 1
            got = got[:head] + ["..."] + (got[len(got) - tail:] if tail else [])
        out.append(command)
        out.extend(got)
        i = end
    path.write_text("\n".join(out))


def held_out_sentence(path):
    """The sentence after README's first example says in words what its last line prints
    ("prediction is -5.4%" -> "lands 5.4% below it"); tests/cli/test_readme.cpp checks the two agree."""
    text = path.read_text()
    error = float(re.search(r"prediction is ([+-]?[0-9.]+)%", text).group(1))
    words = f"prediction lands {abs(error):.1f}% {'below' if error < 0 else 'above'} it"
    path.write_text(re.sub(r"prediction lands [0-9.]+% (below|above) it", words, text, count=1))


for name in ("README.md", "docs/validation.md"):
    rewrite(ROOT / name)
held_out_sentence(ROOT / "README.md")
