#!/usr/bin/env bash
# Lint and format check: ruff check + ruff format --check on the Python (settings in pyproject.toml),
# clang-format (.clang-format) on the C++. ruff and clang-format come from requirements.txt (pinned), so
# ./build.sh's .venv has them. CI runs it after the tests (.ci/run); .pre-commit-config.yaml runs the same.
# Usage: tools/lint.sh [--fix] [PATH...]   (default: the whole tree; --fix rewrites instead of checking)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${LINT_BIN:-.venv/bin}
fix=0
if [ "${1:-}" = --fix ]; then fix=1; shift; fi
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(.)
py=()  # directories (ruff finds the Python in them) and Python files; the C++ files git tracks under the paths
for p in "${paths[@]}"; do
  if [ -d "$p" ] || [[ $p == *.py || $p == *.pyi ]]; then py+=("$p"); fi
done
mapfile -t cpp < <(git ls-files -- "${paths[@]}" | grep -E '\.(c|cc|cpp|h|hpp)$' || true)
status=0
if [ $fix = 1 ]; then
  if [ ${#py[@]} -gt 0 ]; then
    "$bin/ruff" check --fix "${py[@]}" || status=1
    "$bin/ruff" format "${py[@]}" || status=1
  fi
  [ ${#cpp[@]} = 0 ] || "$bin/clang-format" -i "${cpp[@]}" || status=1
else
  if [ ${#py[@]} -gt 0 ]; then
    "$bin/ruff" check "${py[@]}" || status=1
    "$bin/ruff" format --check "${py[@]}" || status=1
  fi
  [ ${#cpp[@]} = 0 ] || "$bin/clang-format" --dry-run --Werror "${cpp[@]}" || status=1
fi
echo "lint: ruff $("$bin/ruff" --version | cut -d' ' -f2), $("$bin/clang-format" --version | grep -o 'version [0-9.]*'), ${#cpp[@]} C++ files: $([ $status = 0 ] && echo ok || echo FAILED)"
exit $status
