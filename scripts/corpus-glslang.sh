#!/usr/bin/env bash
# A third real-shader collection, made here: the HLSL sources of ../shared/corpora/willems/shaders/hlsl
# compiled by glslang's HLSL front end (glslangValidator -D, Vulkan 1.1: SPIR-V 1.3, where the BufferBlock decoration glslang writes for RWStructuredBuffer is still valid) instead of DXC, one
# NAME.STAGE.spv beside each source, in the layout scripts/corpus-pipelines.py reads. Another
# compiler's SPIR-V for the same programs: glslang's own builder, its own decorations and
# combined image samplers. Ray-tracing stages are compiled for Vulkan 1.2 (SPIR-V 1.4, the
# first with ray tracing in core). One line per source that glslang refuses in
# OUT/refused.txt; the counts on stdout.
#
#   scripts/corpus-glslang.sh OUT [HLSL]
set -uo pipefail
OUT=$(realpath -m "$1"); SRC=${2:-$(dirname "$0")/../../shared/corpora/willems/shaders/hlsl}
SRC=$(realpath "$SRC")
command -v glslangValidator >/dev/null || { echo "corpus-glslang.sh: needs glslangValidator (Debian: glslang-tools)" >&2; exit 2; }
mkdir -p "$OUT"; : > "$OUT/refused.txt"
ok=0; refused=0
cd "$SRC" || exit 2
for f in */*.vert */*.frag */*.comp */*.tesc */*.tese */*.geom */*.mesh */*.task \
    */*.rgen */*.rmiss */*.rchit */*.rahit */*.rint */*.rcall; do
  [ -f "$f" ] || continue
  mkdir -p "$OUT/$(dirname "$f")"
  case "${f##*.}" in r*) env=vulkan1.2 ;; *) env=vulkan1.1 ;; esac
  if log=$(glslangValidator -V -D --target-env "$env" -e main -S "${f##*.}" -o "$OUT/$f.spv" "$f" 2>&1); then
    ok=$((ok + 1))
  else
    refused=$((refused + 1))
    echo "$f: $(echo "$log" | grep -m1 ERROR | sed "s|$SRC/||")" >> "$OUT/refused.txt"
  fi
done
echo "glslang $(glslangValidator --version | head -1 | sed 's/.*: *//'): $ok modules from $SRC, $refused sources refused (OUT/refused.txt)"
