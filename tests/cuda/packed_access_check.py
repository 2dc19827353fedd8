#!/usr/bin/env python3
"""The dense-path CUDA kernels move 16 bytes per access: reads the SASS of a compiled test
executable (cuobjdump -sass, which needs no GPU) and checks that the elementwise kernels of the
forward (AssignPlan) and of the fused backward (BackwardPlan) are instantiated with V > 1 only,
and that some of each load and store with 128-bit instructions (LDG.E.128, STG.E.128).

  packed_access_check.py EXECUTABLE

Exit status 0 when the checks hold, 1 when one fails, 77 (skipped) when cuobjdump or nvdisasm
is not to be found: in PATH, in the CUDA toolkit, or in PyPI's nvidia-cuda-cuobjdump and
nvidia-cuda-nvdisasm (scripts/common.sh installs them for the tests).
"""
import os
import re
import shutil
import subprocess
import sys


def tool_dirs():
    dirs = [os.environ.get("CUDA_PATH", "/usr/local/cuda") + "/bin"]
    try:
        import nvidia  # PyPI's CUDA packages share this namespace package

        for root in nvidia.__path__:
            for sub in sorted(os.listdir(root)):
                dirs.append(os.path.join(root, sub, "bin"))
    except ImportError:
        pass
    return dirs


def find(tool):
    found = shutil.which(tool)
    if found:
        return found
    for d in tool_dirs():
        path = os.path.join(d, tool)
        if os.access(path, os.X_OK):
            return path
    return None


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    cuobjdump, nvdisasm = find("cuobjdump"), find("nvdisasm")
    if not cuobjdump or not nvdisasm:
        print("skipped: cuobjdump and nvdisasm not found (pip install nvidia-cuda-cuobjdump "
              "nvidia-cuda-nvdisasm)")
        return 77
    env = dict(os.environ, PATH=os.path.dirname(nvdisasm) + os.pathsep + os.environ["PATH"])
    sass = subprocess.run([cuobjdump, "-sass", sys.argv[1]], env=env, check=True,
                          capture_output=True, text=True).stdout
    kernels = {"forward": [], "backward": []}
    for function in re.split(r"\n\s*Function : ", sass)[1:]:
        name = function.split("\n", 1)[0].strip()
        width = re.search(r"dense_kernelILi(\d+)E", name)
        if not width:
            continue
        kind = "backward" if "BackwardPlan" in name else "forward"
        kernels[kind].append((int(width.group(1)), "LDG.E.128" in function,
                              "STG.E.128" in function))
    failed = False
    for kind, found in kernels.items():
        widths = sorted({w for w, _, _ in found})
        loads = sum(1 for _, l, _ in found if l)
        stores = sum(1 for _, _, s in found if s)
        print(f"{kind}: {len(found)} dense kernels, V in {widths}, {loads} with 128-bit loads, "
              f"{stores} with 128-bit stores")
        if not found or 1 in widths or loads == 0 or stores == 0:
            print(f"FAILED: the {kind} dense kernels must take V > 1 and load and store 16 bytes "
                  "at a time")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
