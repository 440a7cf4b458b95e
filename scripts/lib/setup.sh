# Shared set-up for scripts/run-demo and scripts/run-tests (sourced, bash).
# Each step installs only what is missing, so a second run is fast:
#   deg_setup_apt      Debian packages from .ci/deps-apt.txt (apt-get, as root)
#   deg_setup_venv     .venv with the pip packages of .ci/deps-pip.txt
#   deg_setup_model    the default model in ${DEG_CACHE:-~/.cache/deg}/models
#   deg_setup_package  `pip install .` of this tree into .venv (when sources changed)

DEG_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DEG_VENV="${DEG_VENV:-$DEG_ROOT/.venv}"

deg_log() { printf '\033[1m[deg]\033[0m %s\n' "$*" >&2; }
deg_die() { printf '[deg] error: %s\n' "$*" >&2; exit 1; }

deg_setup_apt() {
    local list="$DEG_ROOT/.ci/deps-apt.txt" missing=() pkg
    command -v dpkg-query >/dev/null 2>&1 || {
        deg_log "not a Debian system: skipping apt packages; install the equivalents of $list"
        return 0; }
    while read -r pkg; do
        pkg="${pkg%%#*}"; pkg="${pkg//[[:space:]]/}"
        [ -n "$pkg" ] || continue
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
            || missing+=("$pkg")
    done < "$list"
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        deg_die "missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})"
    fi
    deg_log "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q || deg_die "apt-get update failed"
    apt-get install -y -q --no-install-recommends "${missing[@]}" \
        || deg_die "apt-get install ${missing[*]} failed"
}

deg_setup_venv() {
    local py="${DEG_PYTHON:-python3}" req="$DEG_ROOT/.ci/deps-pip.txt" stamp sum
    if [ ! -x "$DEG_VENV/bin/python" ]; then
        deg_log "creating the virtual environment $DEG_VENV ($py)"
        "$py" -m venv "$DEG_VENV" || deg_die "$py -m venv failed (Debian: apt-get install python3-venv)"
    fi
    stamp="$DEG_VENV/.deg-deps-pip.sha256"
    sum="$(sha256sum "$req" | cut -d' ' -f1)"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
        deg_log "installing Python packages from .ci/deps-pip.txt"
        "$DEG_VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip \
            || deg_die "pip upgrade failed"
        "$DEG_VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$req" \
            || deg_die "pip install -r .ci/deps-pip.txt failed"
        echo "$sum" > "$stamp"
    fi
    # meson and ninja come from the venv.
    export PATH="$DEG_VENV/bin:$PATH"
}

deg_setup_model() {
    if [ -n "${DEG_MODEL:-}" ]; then
        [ -e "$DEG_MODEL" ] || deg_die "DEG_MODEL=$DEG_MODEL does not exist"
        return 0
    fi
    DEG_MODEL="$("$DEG_VENV/bin/python" "$DEG_ROOT/scripts/fetch-model")" \
        || deg_die "could not fetch the default model (see above)"
    export DEG_MODEL
}

# Fingerprint of the sources that go into the package (tracked + untracked,
# not ignored); empty outside a git checkout (then always reinstall).
deg_source_fingerprint() {
    git -C "$DEG_ROOT" rev-parse --git-dir >/dev/null 2>&1 || return 0
    (cd "$DEG_ROOT" && git ls-files -z -c -o --exclude-standard \
        | xargs -0 sha256sum 2>/dev/null | sha256sum | cut -d' ' -f1)
}

deg_setup_package() {
    local stamp="$DEG_VENV/.deg-package.sha256" fp
    fp="$(deg_source_fingerprint)"
    if [ -n "$fp" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$fp" ] \
        && "$DEG_VENV/bin/python" -c 'import deg' 2>/dev/null; then
        return 0
    fi
    deg_log "building and installing the deg package into $DEG_VENV (pip install .)"
    rm -f "$stamp"
    # Build dir kept for incremental rebuilds; build isolation off because the
    # venv already has meson-python, meson, ninja and cffi.
    (cd "$DEG_ROOT" && nice -n 10 "$DEG_VENV/bin/python" -m pip install -q \
        --disable-pip-version-check --no-build-isolation --no-deps \
        -Cbuild-dir=build-pip -Ccompile-args=-j2 .) \
        || deg_die "pip install . failed (see the build log above)"
    [ -n "$fp" ] && echo "$fp" > "$stamp"
    return 0
}
