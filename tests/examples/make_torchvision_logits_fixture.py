#!/usr/bin/env python3
"""Writes the fixture of tests/examples/test_resnet.cpp's torchvision-logits test:

- data/torchvision_resnet18_w8.safetensors: a state dict of torchvision's ResNet-18 (10 classes)
  narrowed to width 8 (stem and layer1 8 channels, then 16, 32, 64; torchvision's are 64 to 512)
  with random weights and batch-norm statistics, in float16, saved as
  `safetensors.torch.save_file(model.state_dict())` saves one: what `resnet50_train
  --init-checkpoint` reads;
- data/torchvision_resnet18_w8_logits.safetensors: "input", two 3x64x64 images (float32), and
  "logits", torchvision's eval-mode output for them computed in float64 (float32).

torchvision's ResNet has no width option, so the model is built at full width and every
convolution, batch norm and the classifier is then given tensors of an eighth of the channels;
its forward (torchvision's modules) reads whatever tensors they hold. Every weight and input is
rounded to float16 first, so the file holds exactly the values the logits were computed from.
The test does not need Python; rerun this only to regenerate the fixture (pip install
torchvision safetensors; nothing is downloaded).
"""
import os

import torch
import torchvision
from safetensors.torch import save_file

WIDTH_DIVISOR = 8
CLASSES = 10


def narrowed(channels: int) -> int:
    return channels if channels == 3 else channels // WIDTH_DIVISOR


def f16(t: torch.Tensor) -> torch.Tensor:
    return t.half().double()


def narrow_resnet18(gen: torch.Generator) -> torch.nn.Module:
    model = torchvision.models.resnet18(num_classes=CLASSES)
    for module in model.modules():
        if isinstance(module, torch.nn.Conv2d):
            o, i, kh, kw = module.weight.shape
            o, i = narrowed(o), narrowed(i)
            std = (2.0 / (i * kh * kw)) ** 0.5  # fan-in: activations stay near unit scale
            w = torch.randn(o, i, kh, kw, generator=gen, dtype=torch.float64) * std
            module.weight = torch.nn.Parameter(f16(w))
            module.in_channels, module.out_channels = i, o
        elif isinstance(module, torch.nn.BatchNorm2d):
            c = narrowed(module.num_features)
            u = lambda lo, hi: f16(lo + (hi - lo) * torch.rand(c, generator=gen, dtype=torch.float64))
            module.weight = torch.nn.Parameter(u(0.5, 1.5))
            module.bias = torch.nn.Parameter(u(-0.2, 0.2))
            module.running_mean = u(-0.2, 0.2)
            module.running_var = u(0.5, 1.5)
            module.num_features = c
        elif isinstance(module, torch.nn.Linear):
            i = narrowed(module.in_features)
            w = torch.randn(CLASSES, i, generator=gen, dtype=torch.float64) / i**0.5
            module.weight = torch.nn.Parameter(f16(w))
            module.bias = torch.nn.Parameter(f16(0.1 * torch.randn(CLASSES, generator=gen, dtype=torch.float64)))
            module.in_features = i
    return model.double().eval()


def main() -> None:
    gen = torch.Generator().manual_seed(2026)
    model = narrow_resnet18(gen)
    images = f16(torch.rand(2, 3, 64, 64, generator=gen, dtype=torch.float64) * 2 - 1)
    with torch.no_grad():
        logits = model(images)
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    state = {k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in model.state_dict().items()}
    save_file(state, os.path.join(data, "torchvision_resnet18_w8.safetensors"))
    save_file({"input": images.float().contiguous(), "logits": logits.float().contiguous()},
              os.path.join(data, "torchvision_resnet18_w8_logits.safetensors"))
    print("logits:", logits)


if __name__ == "__main__":
    main()
