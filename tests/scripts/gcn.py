# A training script in the shape of PyG's examples/gcn.py, written for the project's tests:
# argparse at import, module-level data, model and optimizer, train()/test() functions and the
# best-validation test accuracy printed per epoch. A two-layer GCN with dropout and Adam, in
# NumPy so each run starts in a fraction of a second, on the small generated graph `graph.npz`
# beside it. The three lines marked `# graphnetz` are all it takes to gate it
# (tests/nocover/test_command_task.py); run by hand it behaves as before.
import argparse
import os.path as osp

import numpy as np

import pytest_graphnetz.script as graphnetz  # graphnetz

parser = argparse.ArgumentParser()
parser.add_argument('--data', type=str, default='graph.npz')
parser.add_argument('--hidden_channels', type=int, default=16)
parser.add_argument('--lr', type=float, default=0.01)
parser.add_argument('--epochs', type=int, default=40)
args = parser.parse_args()
graphnetz.seed()  # graphnetz

raw = np.load(osp.join(osp.dirname(osp.realpath(__file__)), args.data))
x, y = raw['x'].astype(np.float64), raw['y']
train_mask, val_mask, test_mask = raw['train'], raw['val'], raw['test']
adj = np.eye(len(y))
adj[raw['edges'][0], raw['edges'][1]] = 1.0
deg = adj.sum(1) ** -0.5
adj = deg[:, None] * adj * deg[None, :]  # symmetric normalisation, as GCNConv


class GCN:
    def __init__(self, in_channels, hidden_channels, out_channels):
        self.params = [np.random.randn(in_channels, hidden_channels) / np.sqrt(in_channels),
                       np.random.randn(hidden_channels, out_channels) / np.sqrt(hidden_channels)]
        self.training = True

    def dropout(self, h, p=0.5):
        if not self.training:
            return h, 1.0
        mask = (np.random.rand(*h.shape) > p) / (1 - p)
        return h * mask, mask

    def forward(self, x):
        w1, w2 = self.params
        h0, _ = self.dropout(x)
        p1 = adj @ h0
        z1 = p1 @ w1
        h1, m1 = self.dropout(np.maximum(z1, 0))
        p2 = adj @ h1
        self.saved = (p1, z1, m1, p2)
        return p2 @ w2

    def backward(self, grad):
        p1, z1, m1, p2 = self.saved
        w1, w2 = self.params
        grad_h1 = adj.T @ (grad @ w2.T)
        return [p1.T @ (grad_h1 * m1 * (z1 > 0)), p2.T @ grad]


class Adam:
    def __init__(self, params, lr, weight_decay=0.0, betas=(0.9, 0.999), eps=1e-8):
        self.params, self.lr, self.weight_decay, self.betas, self.eps = params, lr, \
            weight_decay, betas, eps
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, grads):
        self.t += 1
        b1, b2 = self.betas
        for p, g, m, v in zip(self.params, grads, self.m, self.v, strict=True):
            g = g + self.weight_decay * p
            m[:] = b1 * m + (1 - b1) * g
            v[:] = b2 * v + (1 - b2) * g * g
            p -= self.lr * (m / (1 - b1 ** self.t)) / (np.sqrt(v / (1 - b2 ** self.t)) + self.eps)


model = GCN(x.shape[1], args.hidden_channels, int(y.max()) + 1)
optimizer = Adam(model.params, lr=args.lr, weight_decay=5e-4)


def train():
    model.training = True
    out = model.forward(x)
    prob = np.exp(out - out.max(1, keepdims=True))
    prob /= prob.sum(1, keepdims=True)
    loss = -np.log(prob[train_mask, y[train_mask]]).mean()
    grad = prob.copy()
    grad[np.arange(len(y)), y] -= 1
    grad[~train_mask] = 0
    optimizer.step(model.backward(grad / train_mask.sum()))
    return float(loss)


def test():
    model.training = False
    pred = model.forward(x).argmax(-1)
    return [float((pred[m] == y[m]).mean()) for m in (train_mask, val_mask, test_mask)]


best_val_acc = test_acc = 0
for epoch in range(1, args.epochs + 1):
    loss = train()
    train_acc, val_acc, tmp_test_acc = test()
    if val_acc > best_val_acc:
        best_val_acc = val_acc
        test_acc = tmp_test_acc
    graphnetz.record(test=tmp_test_acc, val=val_acc, train_loss=loss)  # graphnetz
    print(f'Epoch: {epoch:03d}, Loss: {loss:.4f}, Val: {val_acc:.4f}, Test: {test_acc:.4f}')
