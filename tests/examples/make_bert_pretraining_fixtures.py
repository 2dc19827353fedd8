#!/usr/bin/env python3
"""Writes tests/examples/data/bert_pretraining.safetensors: a small BertForPreTraining's weights,
a batch, and what transformers computes for it.

The model is transformers' BertForPreTraining with a small configuration (vocabulary 99, hidden
32, 2 layers, 2 heads, intermediate 64, dropout 0), initialised by transformers from a fixed seed
and then perturbed so that no bias or LayerNorm parameter keeps its initial 0 or 1. Saved:

  weights: every entry of model.state_dict() under its own name ("bert.embeddings...",
           "cls.predictions.transform.dense.weight", ...; the decoder's tied weight as
           "cls.predictions.decoder.weight", a copy of the word embeddings)
  input_ids, token_type_ids, attention_mask   int64 [2, 12] (the second sequence padded)
  masked_positions, masked_ids                int64 [2, 3] (masked_ids -100 where padded)
  next_sentence_labels                        int64 [2]
  mlm_logits                                  float64 [6, 99]: prediction_logits at the masked
                                              positions, in (sequence, slot) order
  nsp_logits                                  float64 [2, 2]
  loss                                        float64 []: transformers' total_loss (masked-LM
                                              cross-entropy over the labelled positions plus
                                              next-sentence cross-entropy)

tests/examples/test_bert.cpp loads the weights into examples/bert/bert.hpp's BertForPreTraining
by name (float64) and compares.
"""
import os

import torch
from safetensors.torch import save_file
from transformers import BertConfig, BertForPreTraining


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(7)
    config = BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    model = BertForPreTraining(config).double().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(0.1 * torch.randn_like(p))

    input_ids = torch.randint(5, 99, (2, 12))
    input_ids[:, 0] = 2  # a [CLS]-like first token
    token_type_ids = torch.zeros(2, 12, dtype=torch.int64)
    token_type_ids[0, 6:] = 1
    token_type_ids[1, 5:9] = 1
    attention_mask = torch.ones(2, 12, dtype=torch.int64)
    attention_mask[1, 9:] = 0
    masked_positions = torch.tensor([[1, 4, 9], [2, 7, 0]])
    masked_ids = torch.tensor([[17, 42, 8], [63, 5, -100]])
    next_sentence_labels = torch.tensor([0, 1])

    labels = torch.full((2, 12), -100, dtype=torch.int64)
    for b in range(2):
        for p, t in zip(masked_positions[b].tolist(), masked_ids[b].tolist()):
            if t != -100:
                labels[b, p] = t
    with torch.no_grad():
        out = model(input_ids=input_ids, token_type_ids=token_type_ids,
                    attention_mask=attention_mask, labels=labels,
                    next_sentence_label=next_sentence_labels)
    mlm = torch.stack([out.prediction_logits[b, p] for b in range(2)
                       for p in masked_positions[b].tolist()])

    tensors = {name: t.detach().clone().contiguous() for name, t in model.state_dict().items()}
    tensors.update({
        "input_ids": input_ids, "token_type_ids": token_type_ids, "attention_mask": attention_mask,
        "masked_positions": masked_positions, "masked_ids": masked_ids,
        "next_sentence_labels": next_sentence_labels,
        "mlm_logits": mlm.contiguous(), "nsp_logits": out.seq_relationship_logits.contiguous(),
        "loss": out.loss.reshape(()).contiguous(),
    })
    path = os.path.join(here, "data", "bert_pretraining.safetensors")
    save_file(tensors, path, metadata={"transformers": __import__("transformers").__version__})
    print("wrote", path, len(tensors), "tensors")


if __name__ == "__main__":
    main()
