#!/usr/bin/env python3
"""Hugging Face's BERT pretraining step, the peer of ember's bert_pretrain --corpus synthetic.

The same work as ember's synthetic mode: fixed random sequences of 128 tokens on the GPU (two
segments, 20 masked positions each), transformers' BertForPreTraining (masked-LM head over the
whole sequence, as transformers computes it, with labels -100 off the masked positions, plus the
next-sentence head), torch.autocast to bf16, a backward pass and a fused AdamW step (torch has no
LAMB; ember's run in bench/gpu/bert.sh uses --optimizer adamw to match). Eager, then
torch.compile. The configuration is transformers' BertConfig for bert-base-uncased or
bert-large-uncased (--config base|large), dropout 0.1, vocabulary 30522.

Prints one JSON object per mode: {"mode": "eager"|"compile", "config": ..., "batch": B,
"sequences_per_s": ...} and writes them all to --json.
"""
import argparse
import json
import time

import torch


CONFIGS = {
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072),
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                  intermediate_size=4096),
}


def measure(mode, config, batch, seq, predictions, steps, warmup):
    from transformers import BertConfig, BertForPreTraining
    cfg = BertConfig(vocab_size=30522, **CONFIGS[config])
    model = BertForPreTraining(cfg).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)
    g = torch.Generator(device="cuda").manual_seed(0)
    ids = torch.randint(999, 30522, (batch, seq), device="cuda", generator=g)
    types = torch.zeros(batch, seq, dtype=torch.int64, device="cuda")
    types[:, seq // 2:] = 1
    mask = torch.ones(batch, seq, dtype=torch.int64, device="cuda")
    labels = torch.full((batch, seq), -100, dtype=torch.int64, device="cuda")
    positions = torch.linspace(1, seq - 2, predictions, device="cuda").long()
    labels[:, positions] = ids[:, positions]
    nsp = torch.randint(0, 2, (batch,), device="cuda", generator=g)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=labels,
                         next_sentence_label=nsp).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    if mode == "compile":
        step = torch.compile(step)
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    return {"mode": mode, "config": config, "batch": batch, "seq_len": seq, "steps": steps,
            "sequences_per_s": batch * steps / seconds}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="base", choices=sorted(CONFIGS))
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--predictions", type=int, default=20)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    results = []
    for mode in ["eager"] + ([] if a.no_compile else ["compile"]):
        r = measure(mode, a.config, a.batch, a.seq, a.predictions, a.steps, a.warmup)
        print(json.dumps(r), flush=True)
        results.append(r)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
