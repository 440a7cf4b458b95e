# Sourced by scripts/train/*: the Python to run and --help.

# deg_python: $PYTHON, else the README set-up's virtual environment
# (${DEG_VENV:-.venv}), else python3 from PATH.
deg_python() {
    local root venv
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
    venv="${DEG_VENV:-$root/.venv}"
    if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"
    elif [ -x "$venv/bin/python" ]; then echo "$venv/bin/python"
    else echo python3
    fi
}

# deg_help_exit SCRIPT ARGS...: on -h/--help print SCRIPT's header comment and exit 0.
deg_help_exit() {
    local script="$1"; shift
    case "${1:-}" in
        -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$script"; exit 0 ;;
    esac
}
