#!/bin/sh
# Regenerates the SPIR-V fixtures of tests/native.rs from the GLSL beside them (the tests never
# compile at test time). Needs glslangValidator (Debian: glslang-tools); run from anywhere.
set -eu
cd "$(dirname "$0")"
for src in *.vert *.frag *.tesc *.tese *.geom *.comp *.rgen *.rmiss *.rchit *.rahit *.rint *.rcall; do
    glslangValidator -V --target-env vulkan1.3 -o "$src.spv" "$src" >/dev/null
    spirv-val --target-env vulkan1.3 "$src.spv"
done
