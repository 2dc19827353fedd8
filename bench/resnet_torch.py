"""ResNets in PyTorch for the benchmark peers (bench/resnet_cpu_peer.py, bench/gpu/resnet_peer.py):
the architecture of examples/resnet50/resnet.hpp and torchvision's (v1.5: the stride on the 3x3
convolution), with its extra options: a base width and the small-image stem (3x3 stride 1, no
max-pool). With width 64 and the ImageNet stem it is torchvision's resnet18/34/50/101/152.
"""
import torch.nn as nn

BLOCKS = {"resnet18": (False, [2, 2, 2, 2]), "resnet34": (False, [3, 4, 6, 3]),
          "resnet50": (True, [3, 4, 6, 3]), "resnet101": (True, [3, 4, 23, 3]),
          "resnet152": (True, [3, 8, 36, 3])}


class Block(nn.Module):
    def __init__(self, bottleneck, inplanes, planes, stride):
        super().__init__()
        out = planes * (4 if bottleneck else 1)
        if bottleneck:
            convs = [nn.Conv2d(inplanes, planes, 1, bias=False), nn.BatchNorm2d(planes),
                     nn.ReLU(inplace=True),
                     nn.Conv2d(planes, planes, 3, stride, 1, bias=False), nn.BatchNorm2d(planes),
                     nn.ReLU(inplace=True),
                     nn.Conv2d(planes, out, 1, bias=False), nn.BatchNorm2d(out)]
        else:
            convs = [nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False), nn.BatchNorm2d(planes),
                     nn.ReLU(inplace=True),
                     nn.Conv2d(planes, planes, 3, 1, 1, bias=False), nn.BatchNorm2d(planes)]
        self.body = nn.Sequential(*convs)
        self.downsample = None
        if stride != 1 or inplanes != out:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, out, 1, stride, bias=False),
                                            nn.BatchNorm2d(out))
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(self.body(x) + identity)


def resnet(arch="resnet50", num_classes=1000, in_channels=3, width=64, small_stem=False):
    bottleneck, blocks = BLOCKS[arch]
    if small_stem:
        stem = [nn.Conv2d(in_channels, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width),
                nn.ReLU(inplace=True)]
    else:
        stem = [nn.Conv2d(in_channels, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width),
                nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    layers, inplanes = [], width
    for i, n in enumerate(blocks):
        planes = width << i
        for b in range(n):
            layers.append(Block(bottleneck, inplanes, planes, 2 if (b == 0 and i > 0) else 1))
            inplanes = planes * (4 if bottleneck else 1)
    return nn.Sequential(*stem, *layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(inplanes, num_classes))
