#!/usr/bin/env bash
# Everything an NVIDIA device run needs, in the ignored folder .gl of the repository, built here
# (x86-64, Debian 12) for a bare machine that has the driver and nothing else:
#   .gl/*.deb         the Vulkan loader and GL dispatch libraries (Debian 12), unpacked onto / there;
#   .gl/vvl/          Debian 13's Khronos validation layer (1.4.309: the first Debian one that knows
#                     VK_KHR_pipeline_binary), its manifest beside it, and Debian 13's libstdc++ in
#                     .gl/vvl/lib for a machine whose own is older than the layer needs;
#   .gl/bin.tar.xz    granary (release), native-test, vulkan-test (tests/vulkan.rs, release: it
#                     runs the granary at this checkout's target/release/granary, so a device call
#                     copies .gl/bin/granary there, with the checkout at this path or linked to it),
#                     frame_loop, link_cost (stripped) and spirv-val; with OLD=path, that build as
#                     granary-old (an A/B: `OTHER=.gl/bin/granary-old scripts/device-hits.sh …`);
#   .gl/corpora/willems-shaders   the real-shader corpus (../shared does not travel);
#   .gl/setup.sh      sourced first in every run: unpacks the above, sets VK_DRIVER_FILES to the
#                     NVIDIA ICD, and VL_PATH / VL_LIB for scripts/device-pending.sh.
#
#   scripts/device-bundle.sh        then, in a device call with carry [".gl"]:
#   . .gl/setup.sh; export VL_PATH VL_LIB; scripts/device-pending.sh .gl/bin /tmp/p .gl/corpora/willems-shaders
#
# The release builds come first (cargo, here); the folder stays under the 64 MiB a call carries.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.gl/' .git/info/exclude 2>/dev/null || echo /.gl/ >> .git/info/exclude
cargo build --release -p granary-cli --bin granary
# test_binary PACKAGE TEST: builds that integration test in release and prints its executable.
test_binary() {
  cargo test --release --no-run -p "$1" --test "$2" --message-format json 2>/dev/null \
    | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == sys.argv[1] and m.get("executable"):
        print(m["executable"])' "$2"
}
native=$(test_binary granary-vulkan native)
vulkan=$(test_binary granary-cli vulkan)
cargo build --release -p granary-vulkan --example frame_loop --example link_cost
rm -rf .gl/bin .gl/vvl .gl/corpora; mkdir -p .gl/bin .gl/vvl/lib .gl/corpora
ARCH='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64'
if ! ls .gl/libvulkan1_*.deb > /dev/null 2>&1; then
  mkdir -p /tmp/gl-amd64/partial
  apt-get $ARCH -oDir::State::Lists=/tmp/gl-amd64 update > /dev/null
  (cd .gl && apt-get $ARCH -oDir::State::Lists=/tmp/gl-amd64 download \
    libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
fi
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir -p "$t/lists/partial"; echo "deb http://deb.debian.org/debian trixie main" > "$t/trixie.list"
T="$ARCH -oDir::State::Lists=$t/lists -oDir::Etc::SourceList=$t/trixie.list -oDir::Etc::SourceParts=/dev/null"
# shellcheck disable=SC2086
apt-get $T update > /dev/null
# shellcheck disable=SC2086
(cd "$t" && apt-get $T download vulkan-validationlayers libstdc++6 libgcc-s1 2> /dev/null)
for d in "$t"/*.deb; do dpkg -x "$d" "$t/x"; done
cp "$t"/x/usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so "$t"/x/usr/share/vulkan/explicit_layer.d/*.json .gl/vvl/
cp -P "$t"/x/usr/lib/x86_64-linux-gnu/libstdc++.so.6* "$t"/x/usr/lib/x86_64-linux-gnu/libgcc_s.so.1 .gl/vvl/lib/
# The manifest names its library bare, which the loader looks up on the library path: make it
# relative to the manifest's folder, where it is.
sed -i 's#"library_path": "lib#"library_path": "./lib#' .gl/vvl/*.json
for b in target/release/granary "$native" "$vulkan" target/release/examples/frame_loop target/release/examples/link_cost; do
  n=$(basename "$b"); case $n in native-*) n=native-test;; vulkan-*) n=vulkan-test;; esac
  strip -o ".gl/bin/$n" "$b"
done
if [ -n "${OLD:-}" ]; then strip -o .gl/bin/granary-old "$OLD"; fi
cp "$(command -v spirv-val)" .gl/bin/
tar cJf .gl/bin.tar.xz -C .gl bin && rm -rf .gl/bin
cp -r ../shared/corpora/willems/shaders .gl/corpora/willems-shaders
cat > .gl/setup.sh <<'EOF'
# Sourced at the start of a device call (see scripts/device-bundle.sh).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
tar xJf .gl/bin.tar.xz -C .gl
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
VL_PATH=$PWD/.gl/vvl VL_LIB=
grep -q GLIBCXX_3.4.32 "$(ldconfig -p | sed -n 's/.*libstdc++.so.6 (libc6,x86-64) => //p' | head -1)" 2>/dev/null \
  || VL_LIB=$PWD/.gl/vvl/lib
EOF
du -sh .gl; ls -la .gl
