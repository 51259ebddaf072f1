"""The project documents itself: code, tests and docs cite docs/design.md by section title,
never a document a person who clones 9plan does not have."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DESIGN = REPO / "docs" / "design.md"

# The sections colleagues and code comments cite; renaming one breaks their citations.
SECTIONS = (
    "Model and invariants",
    "Services and queries",
    "Transactions and writer turns",
    "Plan files",
    "Repair",
    "Search",
    "Errors",
    "The edges",
    "Configuration",
    "Speed targets",
)

# Built from parts so that this file does not match itself. The capitalised word matches
# only whole: drf-spectacular's settings name in nineplan/settings.py is not a citation.
OUTSIDE_CITATIONS = re.compile("|".join([r"\b" + "SP" + r"EC\b", "(?i:se" + r"ed\s+0\d)", "\u00a7"]))
# A citation of a section: the file's name, a comma, then the title in double or single
# quotes (a Markdown link's target may sit between); the title may wrap onto the next line.
SECTION_CITATION = re.compile(r"design\.md(?:\]\([^)]*\))?\)?,\s+[\"']([^\"']+)[\"']")


def tracked_text_files() -> list[Path]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout to list the tracked files")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True).stdout.decode("utf-8")
    files = []
    for name in filter(None, listed.split("\0")):
        path = REPO / name
        if path.is_file():
            files.append(path)
    return files


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None  # not text


def test_design_document_has_every_cited_section():
    text = DESIGN.read_text(encoding="utf-8")
    titles = re.findall(r"^## (.+?)\s*$", text, re.MULTILINE)
    missing = [title for title in SECTIONS if title not in titles]
    assert not missing, f"docs/design.md lacks the sections {missing}"


def test_no_tracked_file_cites_documents_outside_the_repository():
    found = []
    for path in tracked_text_files():
        if path == Path(__file__).resolve():
            continue
        text = read_text(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if OUTSIDE_CITATIONS.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()[:100]}")
    assert not found, "cite docs/design.md instead:\n" + "\n".join(found)


def test_every_cited_section_of_the_design_exists():
    titles = set(re.findall(r"^## (.+?)\s*$", DESIGN.read_text(encoding="utf-8"), re.MULTILINE))
    wrong = []
    for path in tracked_text_files():
        text = read_text(path)
        if text is None:
            continue
        for match in SECTION_CITATION.finditer(text):
            title = " ".join(match.group(1).split())
            if title not in titles:
                number = text.count("\n", 0, match.start()) + 1
                wrong.append(f"{path.relative_to(REPO)}:{number}: {title!r}")
    assert not wrong, "these citations name no section of docs/design.md:\n" + "\n".join(wrong)


# `module.name` in the documents, where module is one of 9plan's own (by its last part).
CODE_REFERENCE = re.compile(r"`([A-Za-z_][\w/]*)\.([A-Za-z_]\w*)(?:\(\))?`")
DOCUMENTS = (
    "README.md",
    "docs/design.md",
    "docs/deployment.md",
    "docs/benchmarks.md",
    "docs/tools.md",
    "docs/rest.md",
    "docs/configuration.md",
    "docs/commands.md",
)


def _own_modules() -> dict[str, list[str]]:
    """Each module's last name -> the dotted names of 9plan's modules and packages so named
    (migrations aside: the documents name them by number)."""
    found: dict[str, list[str]] = {}
    for package in ("sessions_app", "mcp_bridge", "nineplan"):
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            if "migrations" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.setdefault(parts[-1], []).append(".".join(parts))
    return found


def test_every_name_of_the_code_the_documents_cite_exists():
    import importlib

    modules = _own_modules()
    stale = []
    for document in DOCUMENTS:
        text = (REPO / document).read_text(encoding="utf-8")
        for match in CODE_REFERENCE.finditer(text):
            module, name = match.group(1).replace("/", "."), match.group(2)
            candidates = modules.get(module.split(".")[-1])
            if not candidates or name == "py":
                continue  # not one of 9plan's modules, or a file name ("services.py")
            if not any(hasattr(importlib.import_module(full), name) for full in candidates):
                number = text.count("\n", 0, match.start()) + 1
                stale.append(f"{document}:{number}: {match.group(0)}")
    assert not stale, "the documents name code that is not there:\n" + "\n".join(stale)


def test_the_reference_check_sees_a_stale_name():
    modules = _own_modules()
    assert "sessions_app.services" in modules["services"] and "sessions_app.api" in modules["api"]
    match = CODE_REFERENCE.search("runs inside `services._write()`: a writer turn")
    assert match.groups() == ("services", "_write")


def test_every_file_of_the_project_the_documents_name_exists():
    missing = []
    for document in DOCUMENTS:
        text = (REPO / document).read_text(encoding="utf-8")
        for match in re.finditer(r"`([\w.-]+/[\w./-]*)`", text):
            path = match.group(1).rstrip("/")
            if (REPO / path.split("/")[0]).is_dir() and not (REPO / path).exists():
                number = text.count("\n", 0, match.start()) + 1
                missing.append(f"{document}:{number}: {path}")
    assert not missing, "the documents name files that are not there:\n" + "\n".join(missing)
