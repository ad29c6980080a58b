#!/usr/bin/env python3
"""Checks that modules include only the modules they may use (docs/architecture.md)."""
import pathlib
import re
import sys

ALLOWED = {
    "sim": {"sim"},
    "topology": {"sim", "topology"},
    "collectives": {"sim", "topology", "collectives"},
    "workloads": {"sim", "topology", "collectives", "workloads"},
    "traces": {"sim", "topology", "collectives", "workloads", "traces"},
    "reports": {"sim", "topology", "collectives", "workloads", "reports"},
    "scenario": {"sim", "topology", "workloads", "scenario"},
    "interop": {"sim", "topology", "workloads", "interop"},
    "cli": {"sim", "topology", "collectives", "workloads", "traces", "reports", "scenario", "interop",
            "cli"},
    # A second face: commands through cli's definitions, specs through the modules' parsers.
    "python": {"sim", "topology", "collectives", "workloads", "traces", "reports", "scenario",
               "interop", "cli", "python"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')

root = pathlib.Path(__file__).resolve().parent.parent
errors = []
for module, allowed in ALLOWED.items():
    for path in sorted((root / module).rglob("*")):
        if path.suffix not in {".h", ".cc"}:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = INCLUDE.match(line)
            if match and match.group(1) in ALLOWED and match.group(1) not in allowed:
                errors.append(f"{path.relative_to(root)}:{number}: {module}/ may not include "
                              f"{match.group(1)}/ (allowed: {', '.join(sorted(allowed))})")
for error in errors:
    print(error, file=sys.stderr)
sys.exit(1 if errors else 0)
