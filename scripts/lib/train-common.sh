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

# deg_datagen_records: set r2 r3 r4 r5 to the records of datagen-v2..v5 ($DEG_RECORDS,
# $DEG_RECORDS_V3..V5; default /tmp/deg-data-vN/records.jsonl), making a missing run
# with scripts/train/datagen-vN (the inputs of scripts/train/union10.py).
deg_datagen_records() {
    local train v f
    train="$(cd "$(dirname "${BASH_SOURCE[0]}")/../train" && pwd)"
    r2="${DEG_RECORDS:-/tmp/deg-data-v2/records.jsonl}"
    r3="${DEG_RECORDS_V3:-/tmp/deg-data-v3/records.jsonl}"
    r4="${DEG_RECORDS_V4:-/tmp/deg-data-v4/records.jsonl}"
    r5="${DEG_RECORDS_V5:-/tmp/deg-data-v5/records.jsonl}"
    for v in 2 3 4 5; do
        f="r$v"
        [ -f "${!f}" ] || "$train/datagen-v$v" "$(dirname "${!f}")"
    done
}
