#!/usr/bin/env python3
"""Writes tests/examples/data/gpt2_tiny.safetensors: a small GPT-2 from transformers, the oracle of
examples/gpt2/gpt2.hpp (llm.c's recipe for proving a GPT-2 training stack right).

transformers' GPT2LMHeadModel with a small configuration (CONFIG below, no dropout, the tanh GELU)
and random weights (torch.manual_seed(0), its own initialisation) runs one batch of random tokens
in float64 (the weights are float32 values, so ember's float and double runs start from the same
numbers), and the file holds

  param/<name>     float32  every parameter, under Hugging Face's names (transformer.wte.weight,
                            transformer.h.0.attn.c_attn.weight [in, out], ...; lm_head.weight is
                            transformer.wte.weight, tied, and not listed)
  idx, targets     int64    [B, T]: the inputs and the next tokens (targets[:, -1] is -100: ignored)
  logits           float64  [B, T, vocab]
  loss             float64  []: the mean cross entropy over the targets not ignored
  grad/<name>      float64  every parameter's gradient of that loss
  adamw_losses     float64  [10]: the loss before each of 10 AdamW steps on the same batch
                            (torch.optim.AdamW, lr 1e-2, betas (0.9, 0.95), eps 1e-8, weight decay
                            0.1 on tensors of rank >= 2 only, none on biases, LayerNorm and ... ;
                            GPT-2's recipe as nanoGPT and llm.c run it)

and the configuration in the metadata. Rerun only to regenerate (pip install torch transformers
safetensors); the tests do not need Python.
"""
import json
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from transformers import GPT2Config, GPT2LMHeadModel

CONFIG = dict(vocab_size=97, n_positions=32, n_embd=32, n_layer=2, n_head=4)
B, T, STEPS = 2, 16, 10
ADAMW = dict(lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)


def main() -> None:
    torch.manual_seed(0)
    config = GPT2Config(**CONFIG, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        activation_function="gelu_new", layer_norm_epsilon=1e-5,
                        bos_token_id=0, eos_token_id=0)
    config._attn_implementation = "eager"
    model = GPT2LMHeadModel(config)
    params = {n: p.detach().to(torch.float32).clone() for n, p in model.named_parameters()}
    model = model.double()
    model.train()  # dropout is 0: train() and eval() compute the same

    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, CONFIG["vocab_size"], (B, T + 1), generator=g)
    idx, targets = tokens[:, :T].contiguous(), tokens[:, 1:].contiguous()
    targets[:, -1] = -100

    def loss_of(m):
        logits = m(input_ids=idx).logits
        return logits, F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))

    logits, loss = loss_of(model)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}

    decay = [p for p in model.parameters() if p.dim() >= 2]
    others = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay}, {"params": others, "weight_decay": 0.0}], **ADAMW,
                            foreach=False)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        _, l = loss_of(model)
        losses.append(l.item())
        l.backward()
        opt.step()

    tensors = {f"param/{n}": p.contiguous() for n, p in params.items()}
    tensors.update({f"grad/{n}": t.contiguous() for n, t in grads.items()})
    tensors.update(idx=idx, targets=targets, logits=logits.detach().contiguous(),
                   loss=loss.detach().reshape(()), adamw_losses=torch.tensor(losses,
                                                                            dtype=torch.float64))
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "data", "gpt2_tiny.safetensors")
    save_file(tensors, path, metadata={
        "config": json.dumps(CONFIG), "adamw": json.dumps(ADAMW),
        "transformers": __import__("transformers").__version__, "torch": torch.__version__})
    print("wrote", path, f"loss {loss.item():.6f}", "adamw losses", [round(x, 4) for x in losses])


if __name__ == "__main__":
    main()
