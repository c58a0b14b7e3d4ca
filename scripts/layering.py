#!/usr/bin/env python3
"""The library's layering (docs/library.md#layout): a file under lib/src/<layer>/, and a public
header of that layer, includes only headers of its own layer or of layers below it. A public header (lib/include/specsim/x.hpp) belongs
to the layer whose folder holds x.cpp; a header without one (scenario.hpp, report.hpp) to the layer
named in HEADER_LAYER. Exit 1, naming file, line and the include, on every arrow that points up."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Data flows upward: util (errors, units, YAML) -> model (values and the cost model) -> io (files and
# logs into model values) -> calibrate -> whatif -> validate -> report.
ORDER = ["util", "model", "io", "calibrate", "whatif", "validate", "report"]
HEADER_LAYER = {"scenario": "model", "report": "report", "intervention": "model", "specsim": "report"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def header_layers():
    layers = {}
    for header in (ROOT / "lib/include/specsim").glob("*.hpp"):
        stem = header.stem
        impl = list((ROOT / "lib/src").glob(f"*/{stem}.cpp"))
        if stem in HEADER_LAYER:
            layers[f"specsim/{stem}.hpp"] = HEADER_LAYER[stem]
        elif len(impl) == 1:
            layers[f"specsim/{stem}.hpp"] = impl[0].parent.name
        else:
            sys.exit(f"layering.py: lib/include/specsim/{header.name} has {len(impl)} implementations under "
                     "lib/src/*/: name its layer in HEADER_LAYER")
    return layers


def main():
    layers = header_layers()
    rank = {name: i for i, name in enumerate(ORDER)}
    problems = []
    files = [(p, p.relative_to(ROOT / "lib/src").parts[0]) for p in sorted((ROOT / "lib/src").rglob("*.[ch]pp"))]
    files += [(p, layers[f"specsim/{p.name}"]) for p in sorted((ROOT / "lib/include/specsim").glob("*.hpp"))]
    for path, layer in files:
        if layer not in rank:
            problems.append(f"{path.relative_to(ROOT)}: folder '{layer}' is not a layer of {ORDER}")
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            to = layers.get(target) or (target.split("/")[0] if target.split("/")[0] in rank else None)
            if to and rank[to] > rank[layer]:
                problems.append(f"{path.relative_to(ROOT)}:{number}: {layer}/ includes {target} ({to}/, above it)")
    for p in problems:
        print(p)
    if problems:
        print(f"layering.py: {len(problems)} include(s) against the layers {' < '.join(ORDER)}")
        return 1
    print(f"layering.py: every include under lib/src and lib/include points down ({' < '.join(ORDER)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
