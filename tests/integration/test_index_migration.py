"""A home written by an older tianma opens in this one: its vectors (qdrant-client's local mode)
move into Qdrant Edge with progress shown, the index matches SQL exactly, the memories are found
as before; a store from before the association graph gets its records tagged."""

from __future__ import annotations

import shutil
import uuid
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import delete, update

from tests.conftest import RuntimeFactory
from tianma import Runtime
from tianma.storage import schema as t
from tianma.storage.edge_index import EdgeVectorIndex
from tianma.storage.qdrant_index import QdrantVectorIndex
from tianma.storage.sql_store import create_sql_engine

T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)


def test_an_older_home_moves_to_edge_and_is_found_as_before(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime()
    rt.chat("me", "我对花生过敏，吃一点就会起疹子。", dialogue_id="d1", at=T0)
    rt.chat("me", "I keep my bike in the garage behind the blue door.", dialogue_id="d1", at=T0)
    before = [m.id for m in rt.search("me", "花生过敏")]
    assert before
    settings, embedder = rt.settings, rt.memory.embedder
    rt.close()
    # turn the home into what the previous version left: local mode in <home>/qdrant, with one
    # vector missing and one orphan, as a crash could have left them
    edge = EdgeVectorIndex(settings.vectors_path, embedder.dim)
    ids = sorted(edge.ids("me"))
    vectors = edge.get_vectors("me", ids)
    edge.close()
    shutil.rmtree(settings.vectors_path)
    old = QdrantVectorIndex.from_options(dim=embedder.dim, path=settings.qdrant_path)
    kept = ids[1:]
    orphan = str(uuid.uuid4())
    old.upsert("me", [*kept, orphan], np.vstack([*(vectors[i] for i in kept), vectors[ids[0]]]))
    old.close()

    seen: list[tuple[int, int]] = []
    with Runtime(settings, chat_model=rt.chat_model, embedder=embedder,
                 index_progress=lambda done, total: seen.append((done, total))) as again:  # fmt: skip
        assert seen and seen[-1] == (len(kept) + 1, len(kept) + 1)
        assert not settings.qdrant_path.exists()
        assert all(diff.clean for diff in again.check_index())  # the missing one embedded, the orphan gone
        assert again.store.users() == ["me"]
        assert [m.id for m in again.search("me", "花生过敏")] == before
        assert again.chat("me", "我的自行车放哪了？", dialogue_id="d2", at=T0).reply
    with Runtime(settings, chat_model=rt.chat_model, embedder=embedder,
                 index_progress=lambda done, total: seen.append((-1, -1))) as third:  # fmt: skip
        assert (-1, -1) not in seen  # moved once
        assert all(diff.clean for diff in third.check_index())


def test_a_store_from_before_the_graph_gets_its_tags_on_open(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime()
    rt.chat("me", "Wilhelmina grew up on a farm near Uppsala.", dialogue_id="d1", at=T0)
    settings, embedder = rt.settings, rt.memory.embedder
    rt.close()
    engine = create_sql_engine(settings.sql_url)  # as schema v7 left it: no tags, the table empty
    with engine.begin() as conn:
        conn.execute(delete(t.record_tags))
        conn.execute(update(t.records).values(tags=[]))
        conn.execute(t.meta.insert().values(key=t.TAGS_PENDING, value="1"))
    engine.dispose()
    seen: list[tuple[int, int]] = []
    with Runtime(settings, chat_model=rt.chat_model, embedder=embedder,
                 index_progress=lambda done, total: seen.append((done, total))) as again:  # fmt: skip
        (event,) = [r for r in again.memories("me", kind="event") if "Uppsala" in r.content]
        assert {"wilhelmina", "uppsala", "farm"} <= set(event.tags)
        assert seen and seen[-1][0] == seen[-1][1] >= 1
        assert not again.memory.tags.pending()
