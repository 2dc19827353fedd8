#!/usr/bin/env python3
"""Writes include/ember/data/unicode_tables.hpp: the Unicode data that ember's BERT WordPiece
tokenizer (include/ember/data/wordpiece.hpp) needs, taken from Python's `unicodedata` and
`str.lower`, the very functions Hugging Face's (slow) BertTokenizer calls. So the tables follow
the Unicode version of the Python that runs this script (Python 3.11: Unicode 14.0.0), and a
tokenizer built on them agrees with BertTokenizer run under that Python.

    python3 tests/data/make_unicode_tables.py            # rewrites the header in place

What is written (all sorted by code point, looked up by binary search):
  kPropRuns   runs of code points with the same property byte: the tokenizer's character class
              (bits 0-2) and the case class Python's final-sigma rule looks at (bits 3-4)
  kLowerRuns  str.lower() for code points that lower to one other code point, as runs
              (first, last, stride, delta): cp in [first, last], (cp - first) % stride == 0 maps
              to cp + delta. U+0130 (lowers to two code points) is handled in the header's code.
  kDecomps    full canonical decompositions (NFD of one code point), Hangul syllables excepted
              (decomposed by the algorithm in the Unicode standard, section 3.12)
  kCccRuns    canonical combining classes other than 0, as runs, for NFD's canonical ordering
"""
import os
import sys
import unicodedata as ud

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "include", "ember", "data", "unicode_tables.hpp")
N = 0x110000

# Character classes (bits 0-2), as BERT's BasicTokenizer sees them.
OTHER, SPACE, CONTROL, PUNCT, MARK, BREAK = 0, 1, 2, 3, 4, 5
# Case classes (bits 3-4) of CPython's final-sigma rule (Objects/unicodeobject.c,
# handle_capital_sigma): case-ignorable characters are skipped; only the cased, not
# case-ignorable, ones count as cased.
CASE_NONE, CASE_IGNORABLE, CASE_CASED = 0, 1, 2


def char_class(c):
    ch = chr(c)
    cat = ud.category(ch)
    if ch in " \t\n\r" or cat == "Zs":
        return SPACE  # transformers' _is_whitespace
    if cat.startswith("C"):
        return CONTROL  # _is_control: Cc, Cf, Cn, Co, Cs (tab, newline, return excepted)
    if 33 <= c <= 47 or 58 <= c <= 64 or 91 <= c <= 96 or 123 <= c <= 126 or cat.startswith("P"):
        return PUNCT  # _is_punctuation
    if cat == "Mn":
        return MARK  # dropped by _run_strip_accents
    if ch.isspace():
        return BREAK  # U+2028, U+2029: kept as characters, but str.split() splits on them
    return OTHER


def case_class(c):
    # CPython exposes neither Cased nor Case_Ignorable, so they are read off str.lower's final
    # sigma behaviour: "xΣ" lowers to a final sigma when x is cased and not case-ignorable;
    # "AxΣ" does when x is also case-ignorable (skipped back to the cased "A").
    ch = chr(c)
    if (ch + "\u03a3").lower()[-1] == "\u03c2":
        return CASE_CASED
    if ("A" + ch + "\u03a3").lower()[-1] == "\u03c2":
        return CASE_IGNORABLE
    return CASE_NONE


def runs_of(values):
    """[(first, value)] at each change of value over code points 0..N-1."""
    out = []
    prev = None
    for c, v in enumerate(values):
        if v != prev:
            out.append((c, v))
            prev = v
    return out


def lower_runs():
    pairs = []
    for c in range(N):
        low = chr(c).lower()
        if len(low) == 1 and ord(low) != c:
            pairs.append((c, ord(low) - c))
    runs = []  # [first, last, stride, delta]
    for c, d in pairs:
        if runs:
            r = runs[-1]
            if r[3] == d:
                if r[0] == r[1] and c - r[1] in (1, 2):
                    r[1], r[2] = c, c - r[1]
                    continue
                if c - r[1] == r[2]:
                    r[1] = c
                    continue
        runs.append([c, c, 1, d])
    return runs


def main():
    assert ud.unidata_version, "no unicodedata"
    props = []
    for c in range(N):
        props.append(char_class(c) | (case_class(c) << 3))
    prop_runs = runs_of(props)

    decomps = []
    pool = []
    for c in range(N):
        if 0xD800 <= c <= 0xDFFF or 0xAC00 <= c <= 0xD7A3:
            continue
        d = ud.normalize("NFD", chr(c))
        if d != chr(c):
            decomps.append((c, len(pool), len(d)))
            pool.extend(ord(x) for x in d)

    ccc = [ud.combining(chr(c)) for c in range(N)]
    ccc_runs = [(first, v) for first, v in runs_of(ccc)]
    ccc_ranges = []
    for i, (first, v) in enumerate(ccc_runs):
        last = (ccc_runs[i + 1][0] if i + 1 < len(ccc_runs) else N) - 1
        if v:
            ccc_ranges.append((first, last, v))

    lows = lower_runs()
    assert "\u0130".lower() == "i\u0307"
    assert [c for c in range(N) if len(chr(c).lower()) > 1] == [0x130], "new multi-char lowercase"

    def rows(items, per_line, fmt):
        lines = []
        for i in range(0, len(items), per_line):
            lines.append("    " + " ".join(fmt(x) for x in items[i:i + per_line]))
        return "\n".join(lines)

    h = []
    h.append(f"""// Unicode data for the BERT WordPiece tokenizer (wordpiece.hpp), Unicode {ud.unidata_version}.
// GENERATED by tests/data/make_unicode_tables.py from Python {sys.version.split()[0]}'s unicodedata
// and str.lower(), the functions Hugging Face's BertTokenizer calls: do not edit, rerun the script.
#pragma once

#include <cstdint>

namespace ember::data::unicode {{

/// The Unicode version of these tables (Python's unicodedata.unidata_version).
inline constexpr const char* kUnicodeVersion = "{ud.unidata_version}";

/// Character classes (bits 0-2 of a property byte), as BERT's BasicTokenizer sees them.
enum CharClass : std::uint8_t {{
  kOther = 0,
  kSpace = 1,    // space, tab, newline, return, category Zs: become a space
  kControl = 2,  // categories Cc Cf Cn Co Cs (tab, newline, return excepted): dropped
  kPunct = 3,    // category P*, and ASCII 33-47, 58-64, 91-96, 123-126: a token of their own
  kMark = 4,     // category Mn: dropped after NFD when accents are stripped
  kBreak = 5,    // U+2028, U+2029 (Zl, Zp): kept by the cleaning, but str.split() splits there
}};
/// Case classes (bits 3-4) for Python's final-sigma rule.
enum CaseClass : std::uint8_t {{ kCaseNone = 0, kCaseIgnorable = 1, kCaseCased = 2 }};

struct PropRun {{
  std::uint32_t first;  // the run goes on to the next run's first code point
  std::uint8_t props;   // CharClass | CaseClass << 3
}};
struct LowerRun {{
  std::uint32_t first, last;
  std::uint8_t stride;  // every stride-th code point from first maps to cp + delta
  std::int32_t delta;
}};
struct Decomp {{
  std::uint32_t cp;
  std::uint16_t offset;  // into kDecompPool
  std::uint8_t length;
}};
struct CccRun {{
  std::uint32_t first, last;
  std::uint8_t ccc;
}};

// clang-format off
inline constexpr PropRun kPropRuns[] = {{
{rows(prop_runs, 6, lambda r: f"{{0x{r[0]:X}, {r[1]}}},")}
}};

inline constexpr LowerRun kLowerRuns[] = {{
{rows(lows, 4, lambda r: f"{{0x{r[0]:X}, 0x{r[1]:X}, {r[2]}, {r[3]}}},")}
}};

inline constexpr Decomp kDecomps[] = {{
{rows(decomps, 5, lambda r: f"{{0x{r[0]:X}, {r[1]}, {r[2]}}},")}
}};

inline constexpr char32_t kDecompPool[] = {{
{rows(pool, 10, lambda v: f"0x{v:X},")}
}};

inline constexpr CccRun kCccRuns[] = {{
{rows(ccc_ranges, 5, lambda r: f"{{0x{r[0]:X}, 0x{r[1]:X}, {r[2]}}},")}
}};
// clang-format on

}}  // namespace ember::data::unicode
""")
    with open(OUT, "w", encoding="utf-8") as f:
        f.write("".join(h))
    print(f"{OUT}: Unicode {ud.unidata_version}, {len(prop_runs)} property runs, {len(lows)} "
          f"lowercase runs, {len(decomps)} decompositions ({len(pool)} code points), "
          f"{len(ccc_ranges)} combining-class runs")


if __name__ == "__main__":
    main()
