"""reStructuredText read as its rendered page: directives, roles and literal blocks."""

from pathlib import Path

from retrieval.ingest.chunker import chunk_document
from retrieval.ingest.loaders import load_file
from retrieval.text import code_blocks, split_sentences

GUIDE = """=========
Backup tool
===========

Run it with ``backup --all``, as :ref:`the setup guide <setup>` says; :func:`~backup.paths.join`
builds paths. See `the manual <https://tools.example/manual>`_ and links_ [#]_.

.. note:: Backups run nightly, eg. 2 a.m. UTC.

.. warning::

   Never restore over a live database.

.. image:: diagram.png
   :alt: How backups flow

.. _setup:

.. This comment is not text.

Restoring
---------

Restore with::

    backup restore --to /srv/db

    backup verify

.. code-block:: python

   from backup import restore

.. py:function:: restore(target, *, verify=True)

   Restores the latest snapshot to *target*.

.. default-domain:: py

.. graphviz::

   digraph backups {
       db -> snapshot [label="nightly"]
   }

.. option:: --keep <days|all>

   How long snapshots are kept.

+--------+-----------+
| Tier   | Retention |
+========+===========+
| Daily  | 14 days   |
+--------+-----------+
| Weekly | 8 weeks   |
+--------+-----------+

Snapshot
   A copy of the database at one time.
"""


def test_directives_roles_and_literal_blocks_read_as_text_and_code(tmp_path: Path) -> None:
    path = tmp_path / "backup.rst"
    path.write_text(GUIDE, encoding="utf-8")
    [document] = load_file(path, source="backup.rst")
    assert document.title == "Backup tool"
    passages = chunk_document(document, collection="ops")
    text = "\n\n".join(p.text for p in passages)
    assert [s for p in passages for s in split_sentences(p.text)] == [
        "Run it with backup --all, as the setup guide says; join builds paths.",
        "See the manual and links.",
        "Note: Backups run nightly, eg. 2 a.m. UTC.",
        "Warning: Never restore over a live database.",
        "Restoring",
        "Restore with:",
        "restore(target, *, verify=True): Restores the latest snapshot to target.",
        "--keep <days|all>: How long snapshots are kept.",
        "Tier: Daily; Retention: 14 days",
        "Tier: Weekly; Retention: 8 weeks",
        "Snapshot: A copy of the database at one time.",
    ]
    assert code_blocks(text) == [
        "backup restore --to /srv/db\nbackup verify",
        "from backup import restore",
    ]
    for markup in (":ref:", "``", "`_", ".. ", "::", "[#]", "+--", "diagram"):
        assert markup not in text.replace("```", "")
