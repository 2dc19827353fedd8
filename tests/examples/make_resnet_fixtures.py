#!/usr/bin/env python3
"""Writes tests/examples/data/resnet_names.json: torchvision's ResNet-18 and ResNet-50 state dicts.

For each model, the parameters and the buffers as named_parameters() and named_buffers() list
them ([name, shape] in order), the state_dict() key order (each module's own parameters, then its
own buffers, module by module) and the parameter count. tests/examples/test_resnet.cpp checks
examples/resnet50/resnet.hpp against it and does not need Python; rerun this only to regenerate
the fixture (pip install torchvision; no weights are downloaded).
"""
import json
import os

import torchvision


def describe(model):
    return {
        "parameters": [[n, list(p.shape)] for n, p in model.named_parameters()],
        "buffers": [[n, list(b.shape)] for n, b in model.named_buffers()],
        "state_dict": list(model.state_dict().keys()),
        "parameter_count": sum(p.numel() for p in model.parameters()),
    }


def dump(value, indent=0):
    """JSON with one list entry a line (a [name, shape] pair or a name), so diffs read by name."""
    pad = " " * indent
    if isinstance(value, dict):
        items = [f'{pad} {json.dumps(k)}: {dump(v, indent + 1).lstrip()}' for k, v in value.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and value and isinstance(value[0], (list, str)):
        items = [pad + " " + json.dumps(v) for v in value]
        return pad + "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return pad + json.dumps(value)


def main() -> None:
    out = {
        "torchvision": torchvision.__version__,
        "resnet18": describe(torchvision.models.resnet18()),
        "resnet50": describe(torchvision.models.resnet50()),
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "resnet_names.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(dump(out) + "\n")


if __name__ == "__main__":
    main()
