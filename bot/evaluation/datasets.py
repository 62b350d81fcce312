"""A benchmark directory as ``confer eval`` reads it: ``collections.yaml`` plus
``questions_<split>.jsonl``, and the text of the corpus's passages.

Gold is given by passage (``gold_ids``) or by document (``gold_sources``: paths a passage's source
name ends with, for sets written by hand, whose passage ids change whenever a document does); a
question with neither is unanswerable. A question with a ``history`` is a follow-up, asked after
its earlier user turns."""

import json
from dataclasses import dataclass
from pathlib import Path

from bot.errors import DatasetError
from retrieval.collections import CollectionsConfig, resolve_sources
from retrieval.errors import DocumentLoadError
from retrieval.ingest.chunker import chunk_document
from retrieval.ingest.loaders import load_file
from retrieval.ingest.pipeline import source_name


@dataclass(frozen=True)
class EvalQuestion:
    id: str
    question: str
    type: str
    answers: tuple[str, ...]
    gold_ids: tuple[str, ...]
    gold_collections: tuple[str, ...]
    gold_sources: tuple[str, ...] = ()  # answering documents, as paths their source names end with
    history: tuple[tuple[str, str], ...] = ()  # earlier turns: (role "user" | "agent", text)
    reference: str = ""  # the reference answer (a few sentences in orgdocs; a fact in the samples)
    asked: str = ""  # the question as asked, when ``question`` is the dataset's standalone rewrite

    @property
    def has_gold(self) -> bool:
        return bool(self.gold_ids or self.gold_sources)

    @property
    def as_asked(self) -> str:
        """What a person typed: the original turn when the dataset rewrote it, else the question."""
        return self.asked if self.asked and self.history else self.question

    @property
    def user_turns(self) -> list[str]:
        """The earlier turns Confer is asked again (its own answers stand in for the agent's)."""
        return [text for role, text in self.history if role == "user" and text.strip()]


def load_questions(dataset: Path, split: str) -> list[EvalQuestion]:
    path = dataset / f"questions_{split}.jsonl"
    if not path.is_file():
        raise DatasetError(f"{path}: not found")
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            questions.append(
                EvalQuestion(
                    id=str(raw["id"]),
                    question=raw["question"],
                    type=raw.get("type", "all"),
                    answers=tuple(raw.get("answers") or [raw["answer"]]),
                    gold_ids=tuple(raw["gold_ids"]),
                    gold_collections=tuple(raw.get("gold_collections", ())),
                    gold_sources=tuple(str(s) for s in raw.get("gold_sources") or ()),
                    history=tuple((str(t["role"]), str(t["text"])) for t in raw.get("history") or ()),
                    reference=str(raw.get("answer") or ""),
                    asked=str(raw.get("original_question") or ""),
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DatasetError(f"{path}: line {number} is not a valid question") from exc
    if not questions:
        raise DatasetError(f"{path}: no questions")
    return questions


def corpus_texts(config: CollectionsConfig) -> list[str]:
    """The text of every passage of the corpus, chunked as indexing chunks it."""
    texts = []
    for collection in config.collections:
        for path in resolve_sources(collection, config):
            try:
                documents = load_file(path, source=source_name(path, config.base_dir))
            except DocumentLoadError:
                continue
            for document in documents:
                texts += [p.text for p in chunk_document(document, collection=collection.name)]
    return texts
