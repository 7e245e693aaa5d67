# Sourced by the CI steps that need Python packages: `pip_tools VENV PACKAGE...` creates the
# venv if missing (python3-venv from Debian if the machine lacks it) and installs the packages
# at the versions constraints.txt beside this file pins — again whenever that file or the
# package list changes, so a cached venv never keeps an unpinned version.
pip_tools() {
  local venv=$1; shift
  local here stamp
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  stamp="$venv/.pinned-$( (cat "$here/constraints.txt"; echo "$*") | sha256sum | cut -c1-16)"
  [ -f "$stamp" ] && return 0
  if [ ! -x "$venv/bin/python" ]; then
    python3 -c 'import ensurepip, venv' 2>/dev/null || {
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; }
    python3 -m venv "$venv"
  fi
  echo "== pip install $* (pinned: scripts/ci.d/tools/constraints.txt) into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -c "$here/constraints.txt" "$@" && touch "$stamp"
}
