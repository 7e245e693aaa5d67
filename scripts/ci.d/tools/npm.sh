# Sourced by the CI steps that need npm tools: `npm_tools` installs the versions pinned by
# package-lock.json beside this file into .tools/npm (git-ignored) once per lock file, with
# `npm ci` (which refuses a lock that does not match package.json), and sets NPM_TOOLS to that
# directory: binaries in $NPM_TOOLS/node_modules/.bin (buf, tsc, protoc-gen-ts_proto).
npm_tools() {
  local here root
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  root=$(cd "$here/../../.." && pwd)
  NPM_TOOLS=$root/.tools/npm
  if [ ! -d "$NPM_TOOLS/node_modules" ] || ! cmp -s "$here/package-lock.json" "$NPM_TOOLS/package-lock.json"; then
    echo "== npm ci (scripts/ci.d/tools/package-lock.json into .tools/npm)"
    rm -rf "$NPM_TOOLS" && mkdir -p "$NPM_TOOLS"
    cp "$here/package.json" "$here/package-lock.json" "$NPM_TOOLS/"
    (cd "$NPM_TOOLS" && npm ci --silent --no-audit --no-fund >/dev/null) || { rm -rf "$NPM_TOOLS"; return 1; }
  fi
}
