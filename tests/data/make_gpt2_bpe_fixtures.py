#!/usr/bin/env python3
"""Writes tests/data/gpt2_bpe_cases.json: GPT-2's token ids for hard strings and for English prose,
from tiktoken (the reference implementation OpenAI publishes) with GPT-2's own ranks and pattern.

The ranks are GPT-2's vocabulary as PyPI's openai-whisper ships it (whisper/assets/gpt2.tiktoken;
pip install --no-deps openai-whisper tiktoken). tiktoken's built-in "gpt2" encoding downloads the
same file at run time; this builds the Encoding from the package's copy instead, with the pattern
tiktoken's gpt2 uses (GPT-2's encoder.py pattern) and <|endoftext|> = 50256.

The prose is the first 40,000 characters of Debian's dict-gcide (the GNU Collaborative
International Dictionary of English, /usr/share/dictd/gcide.dict.dz): its text is in this file
with its ids, so the test needs neither the package nor Python.
"""
import base64
import gzip
import importlib.util
import json
import os

import tiktoken

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
HARD = [
    "", " ", "  ", "\n", "\n\n\n", "\t\tx", "Hello world", "Hello  world", "Hello   world  ",
    " leading space", "trailing space ", "line one\nline two\r\n\tindented", "a \n b",
    "I'm you're we've they'll she'd it's can't", "I'M YOU'RE 'S 'Tis", "o'clock '' '''",
    "rock 'n' roll", "12345 3.14159 1,000,000 -42 0x1F 2nd", "٣٤٥ ½ ⅓ Ⅻ",
    "naïve café résumé façade", "Straße ǅ ﬁ", "日本語のテキスト 中文", "Привет, мир!",
    "emoji 👍🏽 🇫🇷 👨‍👩‍👧", "e\u0301 combining", "zero\u200bwidth", "non\u00a0breaking",
    "<|endoftext|> is text here", "!!! ??? ... --- ***", "x=1;y=2;", "email@example.com",
    "https://example.com/path?q=1&r=2", "   \t  mixed \u3000 spaces", "tab\tseparated\tvalues",
]


def main():
    spec = importlib.util.find_spec("whisper")
    ranks_path = os.path.join(os.path.dirname(spec.origin), "assets", "gpt2.tiktoken")
    with open(ranks_path, "rb") as f:
        ranks = {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in f if line.strip())}
    enc = tiktoken.Encoding("gpt2", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                            special_tokens={"<|endoftext|>": 50256})
    assert enc.encode_ordinary("Hello world") == [15496, 995]

    with gzip.open("/usr/share/dictd/gcide.dict.dz", "rt", encoding="utf-8") as f:
        prose = f.read(40000)
    cases = [{"text": t, "ids": enc.encode_ordinary(t)} for t in HARD]
    here = os.path.dirname(os.path.abspath(__file__))
    out = {
        "reference": f"tiktoken {tiktoken.__version__}, GPT-2's ranks from openai-whisper",
        "n_vocab": enc.n_vocab,
        "cases": cases,
        "prose": {"source": "/usr/share/dictd/gcide.dict.dz, first 40000 characters",
                  "text": prose, "ids": enc.encode_ordinary(prose)},
    }
    path = os.path.join(here, "gpt2_bpe_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
    print(path, len(cases), "cases,", len(out["prose"]["ids"]), "prose tokens")


if __name__ == "__main__":
    main()
