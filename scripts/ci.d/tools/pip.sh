# Sourced by the CI steps that need Python packages: `pip_tools VENV PACKAGE...` creates the
# venv if missing (python3-venv from Debian if the machine lacks it) and installs the packages
# and their dependencies exactly as requirements.txt beside this file locks them — by version
# and by the SHA-256 of the file (`pip install --require-hashes`: a file whose hash is not
# listed is refused) — again whenever that file or the package list changes, so a cached venv
# never keeps another version. A PACKAGE must be in requirements.in; the lock is regenerated
# by `bash scripts/ci.d/tools/lock-pip.sh`.
pip_tools() {
  local venv=$1; shift
  local here stamp
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  stamp="$venv/.locked-$( (cat "$here/requirements.txt"; echo "$*") | sha256sum | cut -c1-16)"
  [ -f "$stamp" ] && return 0
  if [ ! -x "$venv/bin/python" ]; then
    python3 -c 'import ensurepip, venv' 2>/dev/null || {
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; }
    python3 -m venv "$venv"
  fi
  echo "== pip install $* (locked with hashes: scripts/ci.d/tools/requirements.txt) into $venv"
  # The lock's entries for these packages and everything they depend on (the lock's
  # "# via" notes name each entry's dependents); pip then refuses any dependency missing.
  python3 - "$here/requirements.txt" "$@" >"$venv/.requirements.txt" <<'PY' || return 1
import re, sys
canon = lambda n: re.sub(r"[-_.]+", "-", n).lower()
entries, via, name = {}, {}, None
for line in open(sys.argv[1]):
    m = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==", line)
    if m:
        name = canon(m.group(1))
        entries[name], via[name] = [line], set()
    elif name and line.lstrip().startswith("--hash="):
        entries[name].append(line)
    elif name and line.startswith((" ", "\t")) and line.lstrip().startswith("#"):
        note = line.strip().lstrip("#").strip()
        note = note[len("via"):].strip() if note.startswith("via") else note
        if note and not note.startswith("-"):
            via[name].add(canon(note))
want = {canon(n) for n in sys.argv[2:]}
missing = sorted(want - entries.keys())
if missing:
    sys.exit(f"pip_tools: {', '.join(missing)} not in scripts/ci.d/tools/requirements.txt: "
             "add to requirements.in, run scripts/ci.d/tools/lock-pip.sh")
while True:
    more = {n for n in entries if n not in want and via[n] & want}
    if not more:
        break
    want |= more
for n in sorted(want):
    sys.stdout.write("".join(entries[n]).rstrip(" \\\n") + "\n")
PY
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes \
    -r "$venv/.requirements.txt" && touch "$stamp"
}
