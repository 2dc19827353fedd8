#!/usr/bin/env python3
"""Writes tests/io/data/reference.safetensors with the reference safetensors implementation.

tests/io/test_safetensors.cpp loads this file, checks every value, and checks that ember writes
the same tensors and metadata to the same bytes. The tests do not need Python; rerun this only to
regenerate the fixture (pip install safetensors numpy). Written with safetensors 0.8.0.
"""
import os

import numpy as np
from safetensors import TensorSpec, serialize


def main() -> None:
    tensors = {
        # name: (safetensors dtype name, little-endian array holding the values or their bits)
        "f64": ("float64", np.array([[-1.0, -0.5, 0.0], [0.5, 1.0, 1e300]], dtype="<f8")),
        "f32": ("float32", (np.arange(6, dtype="<f4") * 0.25 - 1).reshape(3, 1, 2)),
        # 1, -2, 0.5, +inf
        "f16": ("float16", np.array([0x3C00, 0xC000, 0x3800, 0x7C00], dtype="<u2")),
        # 1, -3, 3.140625, 0
        "bf16": ("bfloat16", np.array([[0x3F80, 0xC040], [0x4049, 0x0000]], dtype="<u2")),
        "i64": ("int64", np.array(-1234567890123, dtype="<i8")),
        "i32_empty": ("int32", np.zeros((0, 3), dtype="<i4")),
        "i32": ("int32", np.array([-1, 0, 2147483647], dtype="<i4")),
        "u8": ("uint8", np.array([0, 1, 127, 128, 255], dtype="u1")),
        "mask": ("bool", np.array([[True, False], [False, True]], dtype="?")),
    }
    specs = {
        name: TensorSpec(dtype=dtype, shape=list(arr.shape), data_ptr=arr.ctypes.data,
                         data_len=arr.nbytes)
        for name, (dtype, arr) in tensors.items()
    }
    data = bytes(serialize(specs, metadata={"format": "np"}))
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "reference.safetensors")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "wb") as f:
        f.write(data)
    print(f"wrote {out} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
