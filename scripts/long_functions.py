#!/usr/bin/env python3
"""Functions in lib/ and apps/ longer than a limit (80 lines: issue 14's "no function over ~80 lines without
a reason given in a comment"), counted from the first line of the signature to the closing brace.

    scripts/long_functions.py                 # every function in lib/ and apps/ over 80 lines; exit 1 if any
    scripts/long_functions.py --limit 60 lib/src/io/engine_log.cpp
    scripts/long_functions.py --self-test     # what ctest `long_functions` runs

A function may stay long when the comment just above it says why, with the word "long" in it
(`// Long: one table of every key.`); it is then listed as kept and does not fail the run.

It counts braces in the text with comments, strings, characters and raw strings blanked out, so
it needs no compiler: a `{` whose head has a parameter list at namespace or class scope opens a
function, one inside a function whose head ends in `]` or `](...)` opens a lambda (counted on its
own, and inside its function). Macros that open braces would fool it; lib/ has none.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_LIMIT = 80

CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|try)\s*(\(|$)")
REASON = re.compile(r"\blong\b", re.IGNORECASE)


def blank_literals(text):
    """The text with comments and string, character and raw-string literals replaced by spaces
    (newlines kept, so line numbers hold)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            if end < 0:
                out.append(c)
                i += 1
                continue
            j = end + len(m.group(1)) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(source):
    """(first line, last line, kind, name) of every function and lambda body in C++ source."""
    text = blank_literals(source)
    stack = []  # (kind, name, first line)
    last = 0
    found = []
    for m in re.finditer(r"[{};]", text):
        pos = m.start()
        head = text[last:pos]
        if m.group() == "{":
            at_scope = all(kind in ("namespace", "class") for kind, _, _ in stack)
            h = " ".join(head.split())
            kind = "block"
            if re.search(r"\bnamespace\b", h) or h.startswith("extern"):
                kind = "namespace"
            elif re.search(r"\b(class|struct|union|enum)\b[^()]*$", h):
                kind = "class"
            elif at_scope and ")" in h and not CONTROL.search(h) and not h.endswith("="):
                kind = "function"
            elif not at_scope and re.search(r"\]\s*(\([^()]*\))?[^;{}()]*$", h):
                kind = "lambda"
            first = text.count("\n", 0, last + len(head) - len(head.lstrip())) + 1
            name = re.search(r"([~\w:<>]+)\s*\(", h)
            stack.append((kind, name.group(1) if name else "", first))
        elif m.group() == "}" and stack:
            kind, name, first = stack.pop()
            if kind in ("function", "lambda"):
                found.append((first, text.count("\n", 0, pos) + 1, kind, name))
        last = pos + 1
    return found


def reason_above(lines, first):
    """The comment block just above line `first` (1-based), if it says why the function is long."""
    k = first - 2
    comment = []
    while k >= 0 and lines[k].lstrip().startswith("//"):
        comment.append(lines[k])
        k -= 1
    return any(REASON.search(c) for c in comment)


def long_rows(source, label, limit):
    """(too long, kept with a reason): rows of (lines, 'label:first-last', kind, name)."""
    lines = source.splitlines()
    too_long, kept = [], []
    for first, end, kind, name in functions(source):
        length = end - first + 1
        if length > limit:
            row = (length, f"{label}:{first}-{end}", kind, name)
            (kept if reason_above(lines, first) else too_long).append(row)
    return too_long, kept


def label(path):
    """The path from the repository root when it lies inside, else as given."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def report(paths, limit):
    too_long, kept = [], []
    for path in paths:
        rows, reasoned = long_rows(path.read_text(), label(path), limit)
        too_long += rows
        kept += reasoned
    return sorted(too_long, reverse=True), sorted(kept, reverse=True)


SAMPLE = r'''
namespace a {
namespace {
struct S {
  int f() const { return 1; }
};
}  // namespace
int g(int x) {
  const char* s = "{ not a brace";
  const char c = '{';
  // { nor this
  /* { nor
     this } */
  auto lam = [&](int y) {
    if (y) { return y; }
    return 2;
  };
  const auto raw = R"x(})x";
  for (int i = 0; i < 1'000; ++i) { x += lam(i); }
  return x;
}
// Long: kept as it is.
void h() {
}
}  // namespace a
'''


def self_test():
    found = {(kind, name): (first, end) for first, end, kind, name in functions(SAMPLE)}
    expect = {("function", "f"): (5, 5), ("function", "g"): (8, 21), ("lambda", ""): (14, 17),
              ("function", "h"): (23, 24)}
    assert found == expect, f"functions: {found}, expected {expect}"
    lines = SAMPLE.splitlines()
    assert reason_above(lines, 23) and not reason_above(lines, 8)
    too_long, kept = long_rows(SAMPLE, "<sample>", 1)
    assert sorted(r[3] for r in too_long) == ["", "g"] and [r[3] for r in kept] == ["h"], (too_long, kept)
    print("long_functions: self-test passed")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="C++ files (default: lib/ and apps/, **/*.cpp and *.hpp)")
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="longest allowed, in lines")
    parser.add_argument("--self-test", action="store_true", help="check the scanner on a sample")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    paths = [pathlib.Path(p) for p in args.paths] or sorted(
        [*(ROOT / "lib").rglob("*.[ch]pp"), *(ROOT / "apps").rglob("*.[ch]pp")])
    too_long, kept = report(paths, args.limit)
    for length, where, kind, name in too_long:
        print(f"{length:5d}  {where}  {kind} {name}")
    for length, where, kind, name in kept:
        print(f"{length:5d}  {where}  {kind} {name}  (kept: reason above it)")
    return 1 if too_long else 0


if __name__ == "__main__":
    sys.exit(main())
