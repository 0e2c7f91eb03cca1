"""Every KeywordIndex implementation passes this suite (SQLite FTS5, PostgreSQL tsvector and in
memory)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tianma import ConfigError
from tianma.storage.keyword_index import SqliteKeywordIndex, open_keyword_index
from tianma.storage.keyword_memory import InMemoryKeywordIndex
from tianma.storage.keyword_postgres import PostgresKeywordIndex, tsvector_literal
from tianma.storage.protocols import KeywordIndex
from tianma.storage.sql_store import SqlMemoryStore, create_sql_engine
from tianma.text.tokenize import tokenize


@pytest.fixture(params=["sqlite", "postgres", "memory"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KeywordIndex]:
    if request.param == "memory":
        yield InMemoryKeywordIndex()
        return
    url = f"sqlite:///{tmp_path / 'k.db'}" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    engine = create_sql_engine(url)
    yield open_keyword_index(engine)
    engine.dispose()


def hits(index: KeywordIndex, user_id: str, query: str, *, others: bool = False) -> list[str]:
    return [rid for rid, _ in index.search(user_id, tokenize(query), 10, others=others)]


def test_is_a_keyword_index(index: KeywordIndex) -> None:
    assert isinstance(index, KeywordIndex)


def test_search_ranks_more_and_rarer_matches_first(index: KeywordIndex) -> None:
    index.upsert(
        "u",
        [
            ("both", "coffee with milk in the morning"),
            ("rare", "espresso bar downtown"),
            ("common", "milk and sugar"),
            ("other", "mountain hiking trip"),
            ("more", "milk shake recipe"),
        ],
    )
    results = index.search("u", tokenize("coffee milk"), 10)
    assert results[0][0] == "both"
    assert {rid for rid, _ in results} == {"both", "common", "more"}
    assert all(score > 0 for _, score in results)
    assert [s for _, s in results] == sorted((s for _, s in results), reverse=True)
    # "espresso" is in one entry, "milk" in three: the rarer token weighs more
    assert hits(index, "u", "espresso milk")[0] == "rare"
    assert hits(index, "u", "zeppelin") == []
    assert index.search("u", [], 10) == []


def test_limit_caps_the_results(index: KeywordIndex) -> None:
    index.upsert("u", [(f"r{i}", f"garden note {i}") for i in range(5)])
    assert len(index.search("u", tokenize("garden"), 3)) == 3


def test_users_are_isolated(index: KeywordIndex) -> None:
    index.upsert("alice", [("a1", "my cat is called Mimi")])
    index.upsert("bob", [("b1", "my dog is called Rex")])
    assert hits(index, "bob", "cat mimi") == []
    assert hits(index, "alice", "cat mimi") == ["a1"]
    assert hits(index, "alice", "called") == ["a1"]


def test_others_searches_every_user_but_the_caller(index: KeywordIndex) -> None:
    index.upsert("alice", [("a1", "secret project phoenix")])
    index.upsert("bob", [("b1", "project phoenix budget")])
    index.upsert("carol", [("c1", "phoenix arizona trip")])
    assert set(hits(index, "alice", "phoenix project", others=True)) == {"b1", "c1"}
    assert hits(index, "alice", "phoenix project", others=True)[0] == "b1"
    assert set(hits(index, "dave", "phoenix", others=True)) == {"a1", "b1", "c1"}
    assert hits(index, "bob", "secret", others=True) == ["a1"]
    assert hits(index, "alice", "secret", others=True) == []


def test_upsert_replaces_the_earlier_text(index: KeywordIndex) -> None:
    index.upsert("u", [("r", "likes green tea")])
    index.upsert("u", [("r", "likes black coffee")])
    assert hits(index, "u", "green tea") == []
    assert hits(index, "u", "coffee") == ["r"]
    assert index.count("u") == 1


def test_upsert_for_another_user_moves_the_record(index: KeywordIndex) -> None:
    index.upsert("alice", [("r", "piano lessons")])
    index.upsert("bob", [("r", "piano lessons")])
    assert index.ids("alice") == set() and index.ids("bob") == {"r"}
    assert hits(index, "alice", "piano") == []


def test_delete_removes_only_the_given_records(index: KeywordIndex) -> None:
    index.upsert("u", [("a", "red bicycle"), ("b", "red car"), ("c", "blue boat")])
    index.delete(["a", "unknown"])
    index.delete([])
    assert hits(index, "u", "red") == ["b"]
    assert index.ids("u") == {"b", "c"}


def test_drop_user_removes_only_that_user(index: KeywordIndex) -> None:
    index.upsert("alice", [("a1", "swimming pool"), ("a2", "swimming lessons")])
    index.upsert("bob", [("b1", "swimming club")])
    index.drop_user("alice")
    index.drop_user("nobody")
    assert index.count("alice") == 0 and hits(index, "alice", "swimming") == []
    assert hits(index, "bob", "swimming") == ["b1"]


def test_ids_and_count(index: KeywordIndex) -> None:
    assert index.ids("u") == set() and index.count("u") == 0
    index.upsert("u", [("a", "one apple"), ("b", "two pears"), ("c", "three plums")])
    index.upsert("v", [("d", "four figs")])
    assert index.ids("u") == {"a", "b", "c"} and index.count("u") == 3
    assert index.ids("v") == {"d"} and index.count("v") == 1


def test_clear_empties_every_user(index: KeywordIndex) -> None:
    index.upsert("u", [("a", "winter holiday")])
    index.upsert("v", [("b", "winter coat")])
    index.optimize()
    index.clear()
    assert index.count("u") == 0 and index.count("v") == 0
    assert hits(index, "u", "winter") == [] and hits(index, "u", "winter", others=True) == []
    index.upsert("u", [("c", "winter again")])
    assert hits(index, "u", "winter") == ["c"]


def test_optimize_keeps_the_entries(index: KeywordIndex) -> None:
    index.upsert("u", [("a", "library card"), ("b", "library book")])
    index.delete(["b"])
    index.optimize()
    assert hits(index, "u", "library") == ["a"] and index.count("u") == 1


def test_chinese_text(index: KeywordIndex) -> None:
    index.upsert(
        "u",
        [
            ("coffee", "我每天早上都喝咖啡"),
            ("hike", "周末喜欢去爬山和户外运动"),
            ("job", "我是软件工程师"),
        ],
    )
    assert hits(index, "u", "早上喝什么咖啡") == ["coffee"]
    assert hits(index, "u", "周末爬山") == ["hike"]
    assert hits(index, "u", "工程师") == ["job"]  # a sub-word of the search-mode cut
    assert hits(index, "u", "钢琴") == []


def test_english_text_is_case_insensitive(index: KeywordIndex) -> None:
    index.upsert("u", [("e", "Alice works at ACME Corp in Berlin"), ("f", "Bob lives in Paris")])
    assert hits(index, "u", "acme berlin") == ["e"]
    assert hits(index, "u", "Paris") == ["f"]
    assert index.search("u", ["PARIS"], 5)[0][0] == "f"


def test_tokens_that_are_query_syntax_are_plain_words(index: KeywordIndex) -> None:
    # quotes, backslashes, operators of FTS5 and tsquery syntax: a token is only ever a token
    index.upsert("u", [("q", "it's a back\\slash & (pipe | bang!) NOT near:3 'quoted'"), ("o", "walrus tusks")])
    for token in ["it's", "\\", "&", "|", "!", "not", "near:3", "'", "''", ":*", "(", ")"]:
        index.search("u", [token], 5)  # never a syntax error
    assert hits(index, "u", "walrus") == ["o"]


def test_each_database_gets_its_own_index(postgres_url: str, tmp_path: Path) -> None:
    store = SqlMemoryStore.from_url(postgres_url)
    lite = create_sql_engine(f"sqlite:///{tmp_path / 'k.db'}")
    try:
        assert isinstance(open_keyword_index(store.engine, store.tx), PostgresKeywordIndex)
        assert isinstance(open_keyword_index(lite), SqliteKeywordIndex)
        with pytest.raises(ConfigError, match="SQLite and PostgreSQL"):
            SqliteKeywordIndex(store.engine, store.tx)  # FTS5 is SQLite's
        open_keyword_index(store.engine, store.tx)  # a second process opening it finds it there
    finally:
        store.close()
        lite.dispose()


def test_a_tsvector_literal_keeps_tokens_as_they_are() -> None:
    assert tsvector_literal(["tea", "咖啡", "tea"]) == "'tea':1,3 '咖啡':2"
    assert tsvector_literal(["it's", "a\\b"]) == "'it''s':1 'a\\\\b':2"
    assert tsvector_literal([]) == ""
    assert tsvector_literal(["x"] * 20000).endswith(",16383")
