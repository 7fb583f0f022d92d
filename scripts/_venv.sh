# Creates or refreshes .venv at the repository root; re-installs only when pyproject.toml changed.
ensure_venv() {
  local extra="${1:-}"
  local py="${PYTHON:-python3}"
  if [ ! -x .venv/bin/python ]; then
    echo "== creating .venv (first run installs the dependencies, about a minute)"
    "$py" -m venv .venv
  fi
  local stamp=".venv/.stamp-${extra:-base}"
  local want
  want="$(sha256sum pyproject.toml | cut -c1-16)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    if [ -n "$extra" ]; then
      .venv/bin/python -m pip install --quiet -e ".[${extra}]"
    else
      .venv/bin/python -m pip install --quiet -e .
    fi
    echo "$want" > "$stamp"
  fi
}
