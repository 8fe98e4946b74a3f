"""The built-in Java models as PyTorch modules with the same parameter names, layout, initialisers
and loss, so that Java and Python trainers can train one job (models/.../Mlp.java)."""

from __future__ import annotations

import math
from typing import List, Sequence

import torch
from torch import nn
from torch.nn import functional as F


class Dense(nn.Module):
    """z = x @ w + b with w stored [in, out], as Java's Mlp (not nn.Linear's [out, in])."""

    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(n_in, n_out))
        self.b = nn.Parameter(torch.zeros(n_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.b, x, self.w)


class MLP(nn.Module):
    """Java's Mlp: parameters hidden<i>.w [in, out], hidden<i>.b for each hidden layer i = 1..,
    then out.w, out.b; hidden activation relu or tanh; softmax cross-entropy loss. Initialised as
    Java does: no hidden layer (softmax regression) all zeros; else weights He-normal before a relu,
    Xavier-uniform otherwise, biases zero. With no hidden layers it is Java's "softmax" model."""

    def __init__(self, features: int, classes: int, hidden: Sequence[int] = (), activation: str = "relu") -> None:
        super().__init__()
        if features <= 0 or classes < 2:
            raise ValueError("MLP needs features > 0 and classes >= 2, got %d and %d" % (features, classes))
        if activation not in ("relu", "tanh"):
            raise ValueError("activation must be relu or tanh, got %r" % activation)
        self.activation, sizes = activation, [features, *hidden, classes]
        self.layers: List[str] = []
        for i in range(1, len(sizes)):
            last = i == len(sizes) - 1
            layer = Dense(sizes[i - 1], sizes[i])
            if hidden and not last and activation == "relu":
                nn.init.normal_(layer.w, 0.0, math.sqrt(2.0 / sizes[i - 1]))
            elif hidden:
                nn.init.uniform_(layer.w, -math.sqrt(6.0 / (sizes[i - 1] + sizes[i])), math.sqrt(6.0 / (sizes[i - 1] + sizes[i])))
            name = "out" if last else "hidden%d" % i
            self.add_module(name, layer)
            self.layers.append(name)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for name in self.layers[:-1]:
            x = getattr(self, name)(x)
            x = torch.relu(x) if self.activation == "relu" else torch.tanh(x)
        out: torch.Tensor = getattr(self, self.layers[-1])(x)
        return out

    @staticmethod
    def loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean softmax cross-entropy, Java's loss (its gradient is (p - onehot) / n)."""
        return F.cross_entropy(logits, labels)


def softmax(features: int, classes: int) -> MLP:
    """Java's softmax (multinomial logistic) regression: an MLP without hidden layers."""
    return MLP(features, classes)
