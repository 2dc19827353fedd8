#!/usr/bin/env python3
"""The small GPT of bench/user_gpt/gpt.cpp in PyTorch, as its users write it: the same layers,
sizes, optimizer and random-token batch, timed the same way (median step after two warm-up steps).

    gpt_torch.py [--steps N] [--compile] [--threads N]   prints one JSON line
"""
import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, CONTEXT, D_MODEL, HEADS, LAYERS, BATCH = 256, 64, 128, 4, 4, 16


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(D_MODEL)
        self.in_proj = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.out_proj = nn.Linear(D_MODEL, D_MODEL)
        self.ln_2 = nn.LayerNorm(D_MODEL)
        self.fc = nn.Linear(D_MODEL, 4 * D_MODEL)
        self.proj = nn.Linear(4 * D_MODEL, D_MODEL)

    def attn(self, x):
        B, T, E = x.shape
        q, k, v = self.in_proj(x).view(B, T, 3, HEADS, E // HEADS).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out_proj(y.transpose(1, 2).reshape(B, T, E))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D_MODEL)
        self.wpe = nn.Embedding(CONTEXT, D_MODEL)
        self.h = nn.Sequential(*[Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, tokens):
        B, T = tokens.shape
        x = self.h(self.wte(tokens) + self.wpe(torch.arange(T)))
        return self.lm_head(self.ln_f(x)).view(B * T, VOCAB)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Gpt()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    data = torch.randint(0, VOCAB, (BATCH, CONTEXT + 1))
    inputs, targets = data[:, :-1].contiguous(), data[:, 1:].reshape(-1)

    def step():
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    if a.compile:
        step = torch.compile(step)
    ms, losses = [], []
    for _ in range(a.steps + (8 if a.compile else 0)):  # compiled: more warm-up (recompiles)
        start = time.perf_counter()
        losses.append(step().item())
        ms.append((time.perf_counter() - start) * 1e3)
    timed = sorted(ms[(10 if a.compile else 2):])
    print(json.dumps({"ms_per_step": timed[len(timed) // 2], "min_ms": timed[0],
                      "first_loss": losses[0], "last_loss": losses[-1],
                      "threads": torch.get_num_threads(), "torch": torch.__version__,
                      "compiled": a.compile}))


if __name__ == "__main__":
    main()
