"""The Elasticsearch backend's search by words and meaning, through the real ``elasticsearch``
client, against a fake cluster at the HTTP boundary that understands ``dense_vector`` and kNN
(``tests/fakes/elasticsearch.py``; osmem has neither). What the fake cannot show: Elasticsearch's
own analyzer (it does not stem), its approximate kNN (HNSW; the fake's is exact) and anything of a
cluster of several shards or nodes."""

import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from elasticsearch import AsyncElasticsearch, BadRequestError

from retrieval.backends.elastic import ElasticsearchBackend, build_elasticsearch_backend
from retrieval.collections import Collection, CollectionsConfig
from retrieval.embeddings import LocalEmbedder, ProgressCallback, VectorCache, Vectors
from retrieval.ingest.pipeline import index_collection
from retrieval.passages import Passage
from retrieval.scoring import fuse
from retrieval.text import terms
from tests.fakes.elasticsearch import FakeElasticsearch
from tests.fakes.embeddings_api import bag_of_words


@pytest.fixture
async def cluster() -> AsyncIterator[FakeElasticsearch]:
    fake = await FakeElasticsearch().start()
    yield fake
    await fake.stop()


@pytest.fixture
async def hybrid(cluster: FakeElasticsearch, vector_cache_path: Path) -> AsyncIterator[ElasticsearchBackend]:
    backend = build_elasticsearch_backend(
        url=cluster.url, embedder=LocalEmbedder(), vector_cache=VectorCache(vector_cache_path)
    )
    yield backend
    await backend.close()


async def _index_all(backend: ElasticsearchBackend, config: CollectionsConfig) -> None:
    for collection in config.collections:
        report = await index_collection(backend, collection, config)
        assert not report.failures


async def _search_every_collection(
    backend: ElasticsearchBackend, config: CollectionsConfig, question: str, *, limit: int = 5
) -> list[Passage]:
    """Each collection searched as a research branch searches it, then the branches' passages fused
    together, as the graph does (``graph.research.scores``)."""
    found: list[Passage] = []
    for collection in config.collections:
        found += await backend.search(
            collection, question, limit=limit, meaning=question, corpus=config.collections
        )
    return fuse(found)


async def test_an_elasticsearch_question_finds_a_passage_that_shares_no_word_with_it(
    hybrid: ElasticsearchBackend, cluster: FakeElasticsearch, sample_config: CollectionsConfig
) -> None:
    await _index_all(hybrid, sample_config)
    question = "I left my yubikey in a taxi"
    ranked = await _search_every_collection(hybrid, sample_config, question)
    answering = [p for p in ranked[:5] if p.source == "samples/security/passwords-and-mfa.md"]
    assert answering
    # Found by meaning alone: the passage has none of the question's words, and no word score.
    assert not set(terms(question)) & set(terms(f"{answering[0].title} {answering[0].text}"))
    assert answering[0].lexical == 0.0 and answering[0].semantic is not None
    # The kNN went out with the question's vector, at the mapping's dimensions.
    knn = cluster.searches("knn")
    assert knn and all(len(body["knn"]["query_vector"]) == 384 for body in knn)
    assert not cluster.refused


async def test_elasticsearch_branches_score_words_as_one_index_over_every_collection(
    hybrid: ElasticsearchBackend, cluster: FakeElasticsearch, sample_config: CollectionsConfig
) -> None:
    """BM25 with the corpus's statistics (``dfs_query_then_fetch`` over every collection's index):
    a passage scores by words in its collection's search as in one index over all of them, so the
    branches' passages fused together rank as that one index ranks them."""
    await _index_all(hybrid, sample_config)
    everything = Collection(
        name="everything", title="All", sources=tuple(s for c in sample_config.collections for s in c.sources)
    )
    await index_collection(hybrid, everything, sample_config)
    question = "how many days of paid leave do new parents get"
    whole = await hybrid.search(everything, question, limit=40, meaning=question)
    by_text = {p.text: p for p in whole}
    branches = await _search_every_collection(hybrid, sample_config, question, limit=8)
    compared = 0
    for passage in branches:
        if passage.lexical and passage.text in by_text:
            assert passage.lexical == pytest.approx(by_text[passage.text].lexical, rel=1e-9)
            assert passage.semantic == pytest.approx(by_text[passage.text].semantic, abs=1e-6)
            compared += 1
    assert compared >= 5
    assert [p.text for p in branches[:3]] == [p.text for p in whole[:3]]
    assert not cluster.refused


class SizedEmbedder:
    """Bag-of-words vectors of ``dimensions`` under one model name: what a changed
    ``EMBEDDINGS_DIMENSIONS`` gives an endpoint's index."""

    model = "endpoint:test-embeddings"

    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions

    async def embed_passages(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None, waited_for: bool = False
    ) -> Vectors:
        rows = [bag_of_words(t, self.dimensions) for t in texts]
        return np.array(rows, dtype=np.float32).reshape(len(texts), self.dimensions)

    async def embed_query(self, text: str) -> Vectors:
        return np.array(bag_of_words(text, self.dimensions), dtype=np.float32)

    async def close(self) -> None:
        pass


async def test_an_elasticsearch_index_of_other_dimensions_is_searched_by_words_until_indexed_again(
    cluster: FakeElasticsearch, sample_config: CollectionsConfig, caplog: pytest.LogCaptureFixture
) -> None:
    people = sample_config.get("people")
    assert people is not None
    backend = build_elasticsearch_backend(url=cluster.url, embedder=SizedEmbedder(32))
    await index_collection(backend, people, sample_config)
    await backend.close()

    backend = build_elasticsearch_backend(url=cluster.url, embedder=SizedEmbedder(48))
    try:
        sent = len(cluster.searches("knn"))
        with caplog.at_level(logging.WARNING):
            found = await backend.search(people, "parental leave", limit=3)
        assert found and all(p.semantic is None for p in found)  # by words only
        assert len(cluster.searches("knn")) == sent  # no 48-dimension kNN against 32-dimension vectors
        assert "people has no vectors of endpoint:test-embeddings" in caplog.text
        assert "`confer index`" in caplog.text

        await index_collection(backend, people, sample_config)  # written anew at 48 dimensions
        found = await backend.search(people, "parental leave", limit=3, meaning="parental leave")
        assert found and all(p.semantic is not None for p in found)
        assert {len(b["knn"]["query_vector"]) for b in cluster.searches("knn")[sent:]} == {48}
    finally:
        await backend.close()
    assert not cluster.refused


async def test_the_fake_cluster_refuses_what_it_does_not_understand(cluster: FakeElasticsearch) -> None:
    """The fake answers only the request shapes it checks: another shape is a 400, never hits."""
    client = AsyncElasticsearch(cluster.url)
    try:
        mappings = {
            "dynamic": "strict",
            "properties": {"vector": {"type": "dense_vector", "dims": 3, "similarity": "cosine"}},
        }
        await client.indices.create(index="shapes", mappings=mappings)
        with pytest.raises(BadRequestError):
            await client.search(index="shapes", query={"match": {"text": "leave"}})
        with pytest.raises(BadRequestError):
            await client.search(index="shapes", retriever={"rrf": {"retrievers": []}})
        with pytest.raises(BadRequestError):  # a query vector of other dimensions than the mapping's
            await client.search(
                index="shapes",
                knn={"field": "vector", "query_vector": [1.0, 0.0], "k": 1, "num_candidates": 5},
            )
    finally:
        await client.close()
    assert len(cluster.refused) == 3
