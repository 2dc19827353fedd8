#!/usr/bin/env python3
"""Hugging Face's BERT pretraining step, the peer of ember's bert_pretrain --corpus synthetic.

The same work as ember's synthetic mode: fixed random sequences of 128 tokens (two
segments, 20 masked positions each), transformers' BertForPreTraining (masked-LM head over the
whole sequence, as transformers computes it, with labels -100 off the masked positions, plus the
next-sentence head), torch.autocast to bf16 (--precision float: none), a backward pass and an
AdamW step (fused on the GPU; torch has no LAMB; ember's runs in bench/gpu/bert.sh and
bench/bert_cpu.sh use --optimizer adamw to match). Eager, then torch.compile. The configuration
is transformers' BertConfig for bert-base-uncased or bert-large-uncased (--config base|large),
or the tiny and mini BERTs of ember's trainer (Turc et al.'s 2/128 and 4/256), dropout 0.1,
vocabulary 30522. --device cpu runs the same on the CPU (bench/bert_cpu.sh).

Prints one JSON object per mode: {"mode": "eager"|"compile", "config": ..., "batch": B,
"sequences_per_s": ...} and writes them all to --json.
"""
import argparse
import json
import time

import torch


CONFIGS = {
    "tiny": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=512),
    "mini": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                 intermediate_size=1024),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072),
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                  intermediate_size=4096),
}


def measure(mode, config, batch, seq, predictions, steps, warmup, device="cuda", bf16=True):
    from transformers import BertConfig, BertForPreTraining
    cfg = BertConfig(vocab_size=30522, **CONFIGS[config])
    model = BertForPreTraining(cfg).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01,
                            fused=device == "cuda")
    g = torch.Generator(device=device).manual_seed(0)
    ids = torch.randint(999, 30522, (batch, seq), device=device, generator=g)
    types = torch.zeros(batch, seq, dtype=torch.int64, device=device)
    types[:, seq // 2:] = 1
    mask = torch.ones(batch, seq, dtype=torch.int64, device=device)
    labels = torch.full((batch, seq), -100, dtype=torch.int64, device=device)
    positions = torch.linspace(1, seq - 2, predictions, device=device).long()
    labels[:, positions] = ids[:, positions]
    nsp = torch.randint(0, 2, (batch,), device=device, generator=g)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def step():
        with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
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
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    seconds = time.perf_counter() - t0
    return {"mode": mode, "config": config, "batch": batch, "seq_len": seq, "steps": steps,
            "device": device, "precision": "bf16" if bf16 else "float",
            "threads": torch.get_num_threads(), "sequences_per_s": batch * steps / seconds}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="base", choices=sorted(CONFIGS))
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--predictions", type=int, default=20)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--precision", default="bf16", choices=["bf16", "float"])
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    results = []
    for mode in ["eager"] + ([] if a.no_compile else ["compile"]):
        r = measure(mode, a.config, a.batch, a.seq, a.predictions, a.steps, a.warmup, a.device,
                    a.precision == "bf16")
        print(json.dumps(r), flush=True)
        results.append(r)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
