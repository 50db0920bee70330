"""Every repository path a tracked file cites exists, and no tracked file names a path of the machine it
was written on: a doc, comment or string that points at a moved file, or at a script in someone's scratch
folder, is a fact nobody can check. Each failure lists every bad citation as file:line.

A citation is (1) a token starting with a top-level folder of the repository (`csrc/`, `tests/`, ...):
it must name a tracked file or folder from the root, or end one (an include path such as CANN's
`tiling/platform/...`, which our fakes provide); (2) a token starting with a package folder (`harness/`,
`ops/`, `patching/`, `families/`): it must end a tracked path; (3) a Markdown link to a relative target:
it must exist from the linking file; (4) a bare lower-case `name.md` (our docs' naming): a tracked doc.
A token of two parts with neither an extension nor a trailing slash ("tiling/twin tests") is prose, not a
citation. `*`, `**`, `<placeholder>` and `{name}` are wildcards, `{a,b}` a choice; a wildcard citation must
match at least one tracked path. Paths of other repositories are allowed by their prefix, each with the
repository it belongs to, and no such prefix may exist in ours."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOP = ("op_proto", "tiling", "csrc", "python", "tests", "tools", "docs", "cases", "cmake")
PACKAGE = ("harness", "ops", "patching", "families")

_SEG = r"(?:[\w.*+-]|<[\w-]+>|\{[\w.,*-]+\})+"
_NOT_AFTER = r"(?<![\w./@:<>-])"  # not inside a URL, a longer path or a C++ name
CITE = re.compile(_NOT_AFTER + rf"((?:{'|'.join(TOP)})/(?:{_SEG}/?)*)")
PACKAGE_CITE = re.compile(_NOT_AFTER + rf"((?:{'|'.join(PACKAGE)})/(?:{_SEG}/?)+)")
MD_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")
MD_NAME = re.compile(r"(?<![\w./-])([a-z0-9-]+\.md)\b")
MACHINE = re.compile(r"(?<![\w.~$}-])/(?:work|tmp|root|home|Users)(?:/|\b)")

# Paths in other repositories that start like ours: prefix -> whose they are.
EXTERNAL = {
    "docs/zh/": "asc-devkit's Ascend C API pages",
    "docs/design/": "cann-bench's design notes",
    "tools/msopst/": "the CANN toolkit's msOpST",
    "tools/build/": "the CANN toolkit's op compiler",
    "cmake/asc/": "the CANN toolkit's asc CMake modules",
    "tests/ut/": "asc-tools' unit tests",
    "csrc/op_profiling/": "asc-tools' profiling simulator",
    "csrc/core/": "asc-tools' sanitizer",
    "tests/utils.py": "openPangu-2.0-Op's precision check",
    "ops/ops-precision-standard/": "cannbot-skills' precision standard",
}
# Lower-case doc names of other projects.
EXTERNAL_MD = {
    "desc.md": "cann-bench's per-task description",
}
# Paths the build writes (ignored by git).
GENERATED = {
    "python/ascendc_ops/_C": "the compiled extension and its torch version stamp, written by the build",
}
# Machine paths that are not a machine's files (with the reason).
MACHINE_ALLOWED = [
    (re.compile(r"\bmktemp\b.*\s/tmp/\w+\.X+"), "a shell script's mktemp template: the system's temporary folder"),
]
SELF = Path(__file__).resolve().relative_to(ROOT).as_posix()
# Files whose paths are examples they make or refuse on purpose, not citations (with the reason).
EXAMPLES = {
    "tests/package/test_new_op.py": "the files tools/new_op.py writes into a temporary copy of the tree",
    "tests/package/test_family_keys.py": "misnamed files the family-key rule must catch",
    "tools/new_op.py": "the files it writes, and the family siblings it looks for",
}
BINARY = (".png", ".jpg", ".so", ".a", ".gz", ".whl")


@cache
def tracked() -> tuple[frozenset, frozenset]:
    """(tracked files, folders holding them) as repository paths."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    files = frozenset(f for f in out.split("\0") if f)
    dirs = frozenset(str(p) for f in files for p in Path(f).parents if str(p) != ".")
    return files, dirs


def _pattern(cite: str) -> re.Pattern:
    """A citation as a regex over repository paths: * and <placeholder> one path part, {a,b} a choice."""
    out, i = "", 0
    for m in re.finditer(r"\*\*/|\*|<[\w-]+>|\{([\w.,*-]+)\}", cite):
        out += re.escape(cite[i : m.start()])
        if m.group(0) == "**/":
            out += "(?:[^/]+/)*"
        elif m.group(1) and "," in m.group(1):
            out += "(?:" + "|".join(re.escape(a).replace(r"\*", "[^/]*") for a in m.group(1).split(",")) + ")"
        else:
            out += "[^/]*" if m.group(0) == "*" else "[^/]+"
        i = m.end()
    return re.compile(out + re.escape(cite[i:]))


def exists(cite: str, suffix: bool = False) -> bool:
    """`cite` names a tracked file or folder from the root, or (suffix) ends one at a part boundary."""
    files, dirs = tracked()
    cite = cite.rstrip("/")
    if cite in files or cite in dirs:
        return True
    pat = _pattern(cite)
    if any(pat.fullmatch(p) for p in files | dirs):
        return True
    tail = re.compile("/" + pat.pattern + "$")
    return suffix and any(tail.search(p) for p in files | dirs)


def is_citation(cite: str) -> bool:
    """Not prose such as "tiling/twin tests": a file name with an extension, a folder with its slash, or more
    than two parts."""
    last = cite.rstrip("/").rsplit("/", 1)[-1]
    return "." in last or cite.endswith("/") or cite.count("/") >= 2


def allowed(cite: str) -> bool:
    return cite.startswith(tuple(EXTERNAL)) or cite.startswith(tuple(GENERATED))


def text_files():
    """(path, lines) of every tracked text file but this one, whose examples are bad citations on purpose."""
    files, _ = tracked()
    for f in sorted(files - {SELF}):
        if f.endswith(BINARY) or not (ROOT / f).is_file():
            continue
        try:
            yield f, (ROOT / f).read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError:
            continue


def _clean(cite: str) -> str:
    return cite.rstrip(".,")  # a sentence's end, not the path's


def bad_citations(f: str, lines: list[str]) -> list[str]:
    bad = []
    for n, line in enumerate(lines, 1):
        for m in [*CITE.finditer(line), *PACKAGE_CITE.finditer(line)]:
            cite = _clean(m.group(1))
            if is_citation(cite) and not allowed(cite) and not exists(cite, suffix=True):
                bad.append(f"{f}:{n}: {cite}")
        for m in MD_NAME.finditer(line):
            name = m.group(1)
            if name not in EXTERNAL_MD and not any(Path(p).name == name for p in tracked()[0]):
                bad.append(f"{f}:{n}: {name}")
        if f.endswith(".md"):
            for m in MD_LINK.finditer(line):
                target = m.group(1)
                if re.match(r"[a-z]+:", target):
                    continue  # a URL
                path = (Path(f).parent / target).as_posix()
                resolved = str(Path(path)) if not path.startswith("../") else path
                if not exists(_normalise(resolved)):
                    bad.append(f"{f}:{n}: link {target}")
    return bad


def _normalise(path: str) -> str:
    parts: list[str] = []
    for p in path.split("/"):
        if p == "..":
            if parts:
                parts.pop()
        elif p not in ("", "."):
            parts.append(p)
    return "/".join(parts)


def test_cited_repository_paths_exist():
    bad = [b for f, lines in text_files() if f not in EXAMPLES for b in bad_citations(f, lines)]
    assert not bad, "citations of repository paths that do not exist:\n" + "\n".join(bad)


def test_external_prefixes_are_not_ours():
    """A prefix allowed as another repository's must not hide a folder of ours."""
    files, dirs = tracked()
    assert not [p for p in EXTERNAL if any(x == p.rstrip("/") or x.startswith(p) for x in files | dirs)]


ISSUE = re.compile(r"\b[Ii]ssue #?\d+")
CODE = (".py", ".cpp", ".h", ".json", ".cmake", ".sh", ".txt", ".toml", ".yaml", ".inc")


def test_no_issue_numbers_in_code():
    """Code says why, not which ticket asked: an issue number is no reason to a reader of the file."""
    bad = [
        f"{f}:{n}: {line.strip()[:120]}"
        for f, lines in text_files()
        if f.endswith(CODE) or "/" not in f and "." not in f
        for n, line in enumerate(lines, 1)
        if ISSUE.search(line)
    ]
    assert not bad, "issue numbers in code (write the reason instead):\n" + "\n".join(bad)


def test_no_machine_paths():
    bad = [
        f"{f}:{n}: {line.strip()[:120]}"
        for f, lines in text_files()
        for n, line in enumerate(lines, 1)
        if MACHINE.search(line) and not any(rule.search(line) for rule, _ in MACHINE_ALLOWED)
    ]
    assert not bad, "machine paths in tracked files (cite repository paths only):\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "line, found",
    [
        ("see tests/ops/test_nothing_here.py", ["tests/ops/test_nothing_here.py"]),
        ("see `tests/package/test_repo_paths.py`.", []),
        ("op_proto/*/*.json and csrc/op_host/<family>/<op>.cpp", []),
        ("the golden (ops/no_such_reference.py)", ["ops/no_such_reference.py"]),
        ("[harness](harness.md#bench) and [gone](nowhere.md)", ["nowhere.md", "link nowhere.md"]),
        ("https://github.com/hicann/cann-bench/tree/main/tests/x.py", []),
    ],
)
def test_the_detection(line, found):
    """The rules find what they should in docs/x.md and nothing more."""
    assert [b.split(": ", 1)[1] for b in bad_citations("docs/x.md", [line])] == found


def test_machine_path_detection():
    bad = "".join(("/", "work", "/tmp/join.py"))  # written in parts: this file must not name one itself
    assert MACHINE.search(f"joined by `{bad}`")
    assert not MACHINE.search("python/ascendc_ops/tmp/x and $TMPDIR/x")
    assert any(rule.search("work=$(mktemp -d /tmp/x_check.XXXXXX)") for rule, _ in MACHINE_ALLOWED)
