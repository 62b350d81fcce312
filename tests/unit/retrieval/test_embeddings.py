"""``retrieval.embeddings``: the local model, the endpoint client, the query cache and the vector cache."""

import asyncio
import os
import sys
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from retrieval.embeddings import (
    BACKGROUND_NICENESS,
    EndpointEmbedder,
    LocalEmbedder,
    ProgressCallback,
    VectorCache,
    Vectors,
    embed_with_cache,
)
from retrieval.errors import EmbeddingError
from tests.fakes.embeddings_api import FakeEmbeddingsAPI


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder()


async def test_local_vectors_are_unit_length_and_close_for_paraphrases(local: LocalEmbedder) -> None:
    question = await local.embed_query("I left my yubikey in a taxi")
    passages = await local.embed_passages(
        [
            "Report a lost or stolen security key to the security team at once.",
            "Parents get 20 weeks of paid leave after a birth or an adoption.",
            "Deploys to production are frozen on Friday afternoons.",
        ]
    )
    assert passages.shape == (3, local.dimensions) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    similarity = passages @ question
    assert int(np.argmax(similarity)) == 0


async def test_a_batch_embeds_each_text_as_alone(local: LocalEmbedder) -> None:
    texts = ["short one", "a much longer text about the on-call rota and who is paged first at night"]
    together = await local.embed_passages(texts)
    alone = np.stack([(await local.embed_passages([t]))[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-4)  # padding changes nothing


async def test_concurrent_branches_share_one_query_embedding(local: LocalEmbedder) -> None:
    calls = 0
    encode = local._encode

    def counting(texts: Sequence[str]) -> Vectors:
        nonlocal calls
        calls += 1
        return encode(texts)

    local._encode = counting  # type: ignore[method-assign]
    try:
        text = "how many vacation days do we get a year?"
        vectors = await asyncio.gather(*(local.embed_query(text) for _ in range(8)))
        again = await local.embed_query(text)
    finally:
        del local._encode
    assert calls == 1
    assert all(v is vectors[0] for v in [*vectors, again])


async def test_a_question_never_waits_behind_an_index_batch() -> None:
    embedder = LocalEmbedder()
    batch_started, release_batch = threading.Event(), threading.Event()
    encode = embedder._encode

    def held(texts: Sequence[str]) -> Vectors:
        if texts[0].startswith("passage"):  # the index batch holds its thread until released
            batch_started.set()
            release_batch.wait(30)
        return encode(texts)

    embedder._encode = held  # type: ignore[method-assign]
    indexing = asyncio.create_task(embedder.embed_passages(["passage one", "passage two"]))
    try:
        assert await asyncio.to_thread(batch_started.wait, 30)
        vector = await asyncio.wait_for(embedder.embed_query("who is on call tonight?"), timeout=30)
        # Nor do the sentences an answer reads by meaning.
        read = await asyncio.wait_for(
            embedder.embed_passages(["The primary on-call engineer is paged first."], waited_for=True),
            timeout=30,
        )
        assert not indexing.done()  # answered while the batch was still embedding
    finally:
        release_batch.set()
        await indexing
        await embedder.close()
    assert vector.shape == (embedder.dimensions,) and read.shape == (1, embedder.dimensions)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread priorities are Linux's here")
async def test_index_batches_give_way_to_questions_for_a_cpu() -> None:
    """The batches' thread runs nicer than the questions' and the answers': where both want a CPU, a
    question has it."""
    embedder = LocalEmbedder()
    try:
        await embedder.embed_passages(["a passage about the on-call rota"])
        await embedder.embed_query("who is on call tonight?")
        await embedder.embed_passages(["The primary on-call engineer is paged first."], waited_for=True)
        niceness = {
            t.name.rsplit("_", 1)[0]: os.getpriority(os.PRIO_PROCESS, t.native_id or 0)
            for t in threading.enumerate()
            if t.name.startswith("confer-embed") and t.native_id
        }
    finally:
        await embedder.close()
    assert niceness["confer-embed"] == min(19, niceness["confer-embed-query"] + BACKGROUND_NICENESS)
    assert niceness["confer-embed-answer"] == niceness["confer-embed-query"]


async def test_the_local_model_runs_blas_on_one_thread(local: LocalEmbedder) -> None:
    from threadpoolctl import threadpool_info

    await local.embed_query("how many vacation days do we get a year?")
    blas = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    assert blas and all(n == 1 for n in blas)


class CountingEmbedder:
    """Embeds each text as a vector that says how many times it was embedded."""

    model = "test:counting"
    dimensions = 4

    def __init__(self) -> None:
        self.embedded: list[str] = []

    async def embed_passages(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None, waited_for: bool = False
    ) -> Vectors:
        self.embedded += texts
        if progress is not None:
            progress(len(texts))
        return np.array([[1.0, 0.0, 0.0, 0.0] for _ in texts], dtype=np.float32).reshape(len(texts), 4)

    async def embed_query(self, text: str) -> Vectors:
        return np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)

    async def close(self) -> None:
        pass


async def test_the_vector_cache_embeds_a_text_once_per_model(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path / "vectors.sqlite3")
    embedder = CountingEmbedder()
    progress: list[int] = []
    first = await embed_with_cache(embedder, cache, ["a", "b"], progress=progress.append)
    second = await embed_with_cache(embedder, cache, ["b", "c", "a"], progress=progress.append)
    assert embedder.embedded == ["a", "b", "c"]
    assert first.shape == (2, 4) and second.shape == (3, 4)
    assert sum(progress) == 5  # every text is counted, cached or not
    other = CountingEmbedder()
    other.model = "test:other"
    await embed_with_cache(other, cache, ["a"])
    assert other.embedded == ["a"]  # never another model's vector
    cache.close()


async def test_an_unwritable_cache_is_skipped_not_fatal(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = VectorCache(blocker / "vectors.sqlite3")
    embedder = CountingEmbedder()
    await embed_with_cache(embedder, cache, ["a"])
    await embed_with_cache(embedder, cache, ["a"])
    assert embedder.embedded == ["a", "a"]


@pytest.fixture
async def fake_api() -> AsyncIterator[FakeEmbeddingsAPI]:
    api = await FakeEmbeddingsAPI().start()
    yield api
    await api.stop()


async def test_the_endpoint_embeds_in_batches_and_normalises(fake_api: FakeEmbeddingsAPI) -> None:
    embedder = EndpointEmbedder(base_url=fake_api.url, api_key="k", model="fake", batch_size=2)
    vectors = await embedder.embed_passages(["one two", "three", "four five six"])
    await embedder.close()
    assert [len(c) for c in fake_api.calls] == [2, 1]
    assert vectors.shape == (3, fake_api.dimensions)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert embedder.model == "endpoint:fake" and embedder.dimensions == fake_api.dimensions


async def test_the_endpoint_asks_for_the_configured_dimensions(fake_api: FakeEmbeddingsAPI) -> None:
    embedder = EndpointEmbedder(base_url=fake_api.url, api_key="k", model="fake", dimensions=16)
    vector = await embedder.embed_query("hello")
    await embedder.close()
    assert vector.shape == (16,)


async def test_an_endpoint_that_fails_raises_an_embedding_error(fake_api: FakeEmbeddingsAPI) -> None:
    fake_api.fail = 400
    embedder = EndpointEmbedder(base_url=fake_api.url, api_key="k", model="fake")
    with pytest.raises(EmbeddingError) as raised:
        await embedder.embed_query("hello")
    await embedder.close()
    assert "400" in raised.value.reason
