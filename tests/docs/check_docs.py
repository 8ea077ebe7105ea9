"""The docs check: README.md and docs/*.md as a newcomer meets them.

    python3 tests/docs/check_docs.py links ROOT     every relative link resolves (file, and heading
                                                    anchor when given) in README.md and docs/*.md
    python3 tests/docs/check_docs.py python ROOT    every ```python block of README.md and
                                                    docs/*.md that is not an excerpt runs (with the
                                                    built module on PYTHONPATH)
    python3 tests/docs/check_docs.py shell ROOT     every ```sh block of README.md and docs/*.md
                                                    parses (bash -n)
    python3 tests/docs/check_docs.py excerpts ROOT  every block marked as an excerpt of a file is
                                                    one (below)

Every code block is checked one way or another. A ```cpp block that is not an excerpt is a whole
program, compiled and run by CMake (tests/CMakeLists.txt). A block preceded by the line
`<!-- excerpt: PATH -->` shows a file of the repository that the build compiles or runs (an
example, a library source): each of its lines is a line of PATH, in order, compared without
surrounding blanks and trailing comments ("  // …", "  # …"); a line "// …" or "# …" (text may
follow) stands for lines left out. Exit 1 with each failure named (file, line), 0 otherwise.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path


def documents(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def blocks(path: Path, language: str, excerpts: bool = False) -> list[tuple[int, str, str]]:
    """(first line number, text, excerpt path or "") of every fenced block of `language`; with
    excerpts=False the blocks marked as excerpts are left out."""
    out, current, start, source = [], None, 0, ""
    previous = ""
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if current is None and line.startswith("```"):
            marked = re.match(r"^<!-- excerpt: (\S+) -->$", previous)
            source = marked.group(1) if marked else ""
            if line[3:].strip() == language and (excerpts or not source):
                current, start = [], number + 1
            else:
                current, start = False, number + 1  # another language: skip to its end
        elif current is not None and line.startswith("```"):
            if current is not False:
                out.append((start, "\n".join(current), source))
            current = None
        elif current:
            current.append(line)
        elif current == []:
            current.append(line)
        previous = line
    return out


def _code_line(line: str) -> str:
    """A line without surrounding blanks and without a trailing comment."""
    line = line.strip()
    for mark in ("  //", "  #"):
        if mark in line and not line.startswith(mark.strip()):
            line = line[:line.index(mark)].rstrip()
    return line


def _elides(line: str) -> bool:
    text = line.strip()
    return any(text.startswith(m) for m in ("// …", "# …", "…"))


def check_excerpts(root: Path) -> list[str]:
    failures, count = [], 0
    for doc in documents(root):
        for language in ("cpp", "python"):
            for start, code, source in blocks(doc, language, excerpts=True):
                if not source:
                    continue
                count += 1
                target = root / source
                where = f"{doc.relative_to(root)}:{start}"
                if not target.is_file():
                    failures.append(f"{where}: the excerpt's file {source} does not exist")
                    continue
                lines = [_code_line(x) for x in target.read_text(encoding="utf-8").split("\n")]
                at = 0
                for offset, line in enumerate(code.split("\n")):
                    if _elides(line) or not line.strip():
                        continue
                    wanted = _code_line(line)
                    try:
                        at = lines.index(wanted, at) + 1
                    except ValueError:
                        failures.append(f"{where}: line {start + offset} is not in {source} "
                                        f"(after its line {at}): {line.strip()!r}")
                        break
    print(f"{count} excerpts")
    return failures


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def check_links(root: Path) -> list[str]:
    failures = []
    for doc in documents(root):
        text = doc.read_text(encoding="utf-8")
        in_code = False
        for number, line in enumerate(text.split("\n"), 1):
            if line.startswith("```"):
                in_code = not in_code
            if in_code:
                continue
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"^(https?:|mailto:)", target):
                    continue
                path, _, fragment = target.partition("#")
                resolved = (doc.parent / path).resolve() if path else doc
                if not resolved.exists():
                    failures.append(f"{doc.relative_to(root)}:{number}: {target} does not exist")
                    continue
                if fragment and resolved.suffix == ".md":
                    headings = [anchor(h.lstrip("#")) for h in
                                resolved.read_text(encoding="utf-8").split("\n")
                                if re.match(r"^#{1,6} ", h)]
                    if fragment not in headings:
                        failures.append(f"{doc.relative_to(root)}:{number}: {target}: no "
                                        f"heading #{fragment} in {resolved.name}")
    return failures


def check_python(root: Path) -> list[str]:
    failures = []
    for doc in documents(root):
        for start, code, _ in blocks(doc, "python"):
            with tempfile.TemporaryDirectory() as work:
                done = subprocess.run([sys.executable, "-c", code], cwd=work, capture_output=True,
                                      text=True, timeout=900, stdin=subprocess.DEVNULL)
            if done.returncode != 0:
                failures.append(f"{doc.relative_to(root)}:{start}: the python block failed "
                                f"(exit {done.returncode}):\n{done.stderr[-2000:]}")
            else:
                print(done.stdout[-1500:])
    return failures


def check_shell(root: Path) -> list[str]:
    failures = []
    for doc in documents(root):
        for start, code, _ in blocks(doc, "sh"):
            done = subprocess.run(["bash", "-n"], input=code, capture_output=True, text=True)
            if done.returncode != 0:
                failures.append(f"{doc.relative_to(root)}:{start}: {done.stderr.strip()}")
    return failures


def main() -> int:
    checks = {"links": check_links, "python": check_python, "shell": check_shell,
              "excerpts": check_excerpts}
    if len(sys.argv) != 3 or sys.argv[1] not in checks:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(sys.argv[2]).resolve()
    failures = checks[sys.argv[1]](root)
    for f in failures:
        print(f, file=sys.stderr)
    print(f"docs check {sys.argv[1]}: {len(failures)} failure(s) in "
          f"{len(documents(root))} documents")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
