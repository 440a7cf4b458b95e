#!/usr/bin/env bash
# Cartridge demo on a real document nobody in this project wrote: the zlib FAQ
# shipped by Debian (zlib1g-dev, /usr/share/doc/zlib1g-dev/FAQ.gz, ~4.3k
# SmolLM2 tokens). Trains a p = 256 cartridge by self-study, then scores the
# held-out questions under the bare model, the cartridge and the corpus in
# context, and asks a few questions three ways.
# Usage: bench/cartridge_demo.sh [OUTDIR]   (env: DEG_MODEL, STEPS, ACCUM,
#        EPOCHS, GEN_BATCH, LR, SEED, N_EVAL, CHUNK_MIN, CHUNK_MAX, MAX_Q, MAX_A;
#        PYTHON = python with the deg package). Result and timings: bench/README.md.
set -euo pipefail
out="${1:-/tmp/deg-cartridge-demo}"
mkdir -p "$out"
py="${PYTHON:-python3}"
corpus="$out/zlib-faq.txt"
zcat /usr/share/doc/zlib1g-dev/FAQ.gz > "$corpus"
study=(--chunk-min "${CHUNK_MIN:-192}" --chunk-max "${CHUNK_MAX:-384}"
       --max-q "${MAX_Q:-40}" --max-a "${MAX_A:-96}")
model=()
[ -n "${DEG_MODEL:-}" ] && model=(--model "$DEG_MODEL")
deg() { nice -n 10 "$py" -m deg.cli "$@"; }

deg cartridge equiv "${model[@]}" --corpus "$corpus" --p 256 --suffix-max 64
/usr/bin/time -v -o "$out/train.time" \
  nice -n 10 "$py" -m deg.cli cartridge train "${model[@]}" --corpus "$corpus" --p 256 \
  --steps "${STEPS:-16}" --epochs "${EPOCHS:-1}" --accum "${ACCUM:-4}" \
  --gen-batch "${GEN_BATCH:-8}" \
  --lr "${LR:-5e-3}" --seed "${SEED:-7}" --save "$out/cartridge.safetensors" "${study[@]}" \
  | tee "$out/train.log"
# held-out questions (cached per corpus/model/seed/settings, so a rerun scores
# the same ones); --untrained adds the corpus-init control arm
deg cartridge eval "${model[@]}" --load "$out/cartridge.safetensors" --corpus "$corpus" \
  --n-eval "${N_EVAL:-16}" --untrained "${study[@]}" | tee "$out/eval.log"
# the FAQ's own human-written questions and answers (bench/qa/zlib-faq.json):
# bare / untrained control / trained / whole FAQ in context, NLL and correctness
deg cartridge eval "${model[@]}" --load "$out/cartridge.safetensors" \
  --qa "$(dirname "$0")/qa/zlib-faq.json" --json "$out/qa.json" | tee "$out/qa.log"
for q in "Is zlib Y2K-compliant?" "Can zlib handle .zip archives?" \
         "Where can I get a Windows DLL version of zlib?"; do
  deg cartridge ask "${model[@]}" --load "$out/cartridge.safetensors" --corpus "$corpus" \
    --ask "$q" --max-tokens 80 | tee -a "$out/ask.log"
done
