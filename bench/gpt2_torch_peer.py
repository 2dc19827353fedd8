#!/usr/bin/env python3
"""PyTorch's GPT-2 training step on the CPU, the peer of ember's gpt2_train in bench/gpt2_llmc_cpu.sh:
transformers' GPT2LMHeadModel (random weights, its own initialisation, no dropout), AdamW (lr
1e-4, betas 0.9/0.95, weight decay 0.1 on matrices), the gradient clipped to norm 1, batches of B
windows of T tokens from a token file in llm.c's format; eager, or under torch.compile; float, or
with --bf16 the forward under bf16 autocast (float weights and optimizer). Prints one JSON line:
tokens/s over the steps after --warmup.

  python3 bench/gpt2_torch_peer.py --data runs/gpt2/data/train.bin --config 124M -B 4 -T 64
"""
import argparse
import json
import time

import numpy as np
import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

CONFIGS = {"tiny": dict(n_embd=64, n_layer=2, n_head=4, n_positions=128),
           "mini": dict(n_embd=256, n_layer=4, n_head=4, n_positions=256),
           "124M": dict(n_embd=768, n_layer=12, n_head=12, n_positions=1024)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--config", default="124M", choices=CONFIGS)
    ap.add_argument("-B", type=int, default=4)
    ap.add_argument("-T", type=int, default=64)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast")
    a = ap.parse_args()
    tokens = np.fromfile(a.data, dtype=np.uint16, offset=1024).astype(np.int64)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=50257, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        **CONFIGS[a.config])
    model = GPT2LMHeadModel(config)
    model.train()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    others = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": others, "weight_decay": 0.0}], lr=1e-4,
                            betas=(0.9, 0.95), eps=1e-8)

    def loss_of(x, y):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            logits = model(input_ids=x).logits
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), y.reshape(-1))

    step_loss = torch.compile(loss_of) if a.compile else loss_of
    n = a.B * a.T
    times = []
    for step in range(a.warmup + a.steps):
        chunk = torch.from_numpy(tokens[step * n: step * n + n + 1])
        x, y = chunk[:-1].view(a.B, a.T), chunk[1:].view(a.B, a.T)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = step_loss(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        times.append(time.perf_counter() - t0)
    measured = times[a.warmup:]
    print(json.dumps({"config": a.config, "B": a.B, "T": a.T, "compile": a.compile, "bf16": a.bf16,
                      "threads": torch.get_num_threads(), "loss": loss.item(),
                      "tokens_per_s": n * len(measured) / sum(measured)}))


if __name__ == "__main__":
    main()
