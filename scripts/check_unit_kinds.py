#!/usr/bin/env python3
"""Fails when one of ember's functions outside the kinds' namespaces calls into them.

ember's functions that evaluate live in an inline namespace named after the kind of translation
unit (host_units or cuda_units; core/config.hpp, docs/design.md "Two kinds of translation unit"),
so that the linker never merges a host-compiled copy with an nvcc-compiled one. A function left
outside that namespace (a forgotten rule) has one symbol for both kinds while its body differs
between them; the linker then keeps either copy, silently. This check finds such functions in
object files: an ember function whose symbol names no kind but whose code refers to a symbol
that does (relocations of its own section; inline and template functions each have one).

  check_unit_kinds.py OBJECT_OR_ARCHIVE...          exit 1 and a list when any is found
  check_unit_kinds.py --expect NAME OBJECT...       exit 0 only if a function whose demangled
                                                    name contains NAME is found (tests the check)
  --allow NAME                                      a function that is one symbol for both kinds
                                                    by design (the caller says why)
"""
import argparse
import re
import subprocess
import sys

KIND_TOKENS = ("10host_units", "10cuda_units")  # the namespaces as the Itanium ABI mangles them
SECTION = re.compile(r"^RELOCATION RECORDS FOR \[\.text(?:\.unlikely|\.hot|\.startup)?\.(_Z[^\]]+)\]")
FILE = re.compile(r"^(\S+):\s+file format ")
EMBERS = re.compile(r"^_ZN[KVRO]*5ember")  # a function (or member) in namespace ember


def names_kind(symbol):
    return any(token in symbol for token in KIND_TOKENS)


def violations(path):
    """(function, a kind symbol it refers to, file) for each offending function in `path`."""
    out = subprocess.run(["objdump", "-r", path], check=True, capture_output=True, text=True)
    found, member, function = {}, path, None
    for line in out.stdout.splitlines():
        if m := FILE.match(line):
            member = m.group(1)
            continue
        if line.startswith("RELOCATION RECORDS FOR"):
            m = SECTION.match(line)
            function = m.group(1) if m else None
            if function and (names_kind(function) or not EMBERS.match(function)):
                function = None  # in a kind's namespace already, or not ember's
            continue
        if function is None or function in found:
            continue
        fields = line.split()
        if len(fields) == 3 and names_kind(fields[2]):
            found[function] = (re.sub(r"[+-]0x[0-9a-f]+$", "", fields[2]), member)
    return [(f, target, where) for f, (target, where) in found.items()]


def demangle(names):
    if not names:
        return []
    out = subprocess.run(["c++filt"], input="\n".join(names), check=True, capture_output=True,
                         text=True)
    return out.stdout.splitlines()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--expect", help="succeed only if a function with this name is found")
    parser.add_argument("--allow", action="append", default=[],
                        help="a function (part of its demangled name) that is one symbol for both kinds "
                        "by design; the caller says why")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    # CMake hands a list of objects as one argument joined by ';'.
    files = [f for arg in args.files for f in arg.split(";") if f]
    found = [v for path in files for v in violations(path)]
    functions = demangle([f for f, _, _ in found])
    targets = demangle([t for _, t, _ in found])
    kept = [i for i, f in enumerate(functions) if not any(a in f for a in args.allow)]
    found = [found[i] for i in kept]
    functions = [functions[i] for i in kept]
    targets = [targets[i] for i in kept]
    if args.expect is not None:
        hit = any(args.expect in f for f in functions)
        print(f"check_unit_kinds: {'found' if hit else 'did not find'} '{args.expect}' among "
              f"{len(found)} function(s) outside the kinds' namespaces that call into them")
        return 0 if hit else 1
    for f, t, (_, _, where) in zip(functions, targets, found):
        print(f"{where}: {f}\n    is outside the kinds' namespaces but calls {t}")
    if found:
        print(f"check_unit_kinds: {len(found)} function(s) of ember's evaluate outside the kinds' "
              "namespaces: put them in `namespace ...::inline EMBER_UNIT_KIND` or, for a member "
              "of a shared type, give them `class Mode = exec::mode` (core/config.hpp)",
              file=sys.stderr)
        return 1
    print(f"check_unit_kinds: no function outside the kinds' namespaces calls into them "
          f"({len(files)} file(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
