#!/usr/bin/env bash
# Why granary's cache-data harvest finds fewer pipelines in its shared VkPipelineCache than the
# baseline's run does (issue 24 item 5): seed2kx (as scripts/device-capture.sh makes it) harvested
# with --capture cache at -j16 and at -j1, and the baseline (warm --source spirv
# --pipeline-cache-out, the same pipelines in archive order) at -j1 and -j16. At one thread no
# two creations overlap, so equal counts there mean the two create the same things and the gap
# at -j16 is the order or the overlap; unequal counts mean the create infos differ.
#
#   OUT=dir scripts/device-hits.sh      (on the device, after . .gl/setup.sh)
#
# OUT/h/summary.txt: wall and cache hits of each run.
set -u
G=.gl/bin/granary; W=/tmp/w; mkdir -p $W $OUT/h
export __GL_SHADER_DISK_CACHE=0
$G gen seed-scale -o $W/s --pipelines 2000 --vertex-functions 970 --max-run 250 >/dev/null
sed -i '0,/{/s//{"expand_unspecialized":{"formats":["rgba8unorm"]},/' $W/s/pipelines.json
H="harvest $W/s/pipelines.json --backend vulkan --no-pipeline-libraries --json -q"
$G $H -j 16 -o $W/c16.granary --capture cache > $OUT/h/c16.json 2>$OUT/h/c16.err
$G warm $W/c16.granary --source spirv -j 1 --no-pipeline-libraries --pipeline-cache-out $W/b1.cache --json > $OUT/h/b1.json 2>$OUT/h/b1.err
$G $H -j 1 -o $W/c1.granary --capture cache > $OUT/h/c1.json 2>$OUT/h/c1.err
$G warm $W/c16.granary --source spirv -j 16 --no-pipeline-libraries --pipeline-cache-out $W/b16.cache --json > $OUT/h/b16.json 2>$OUT/h/b16.err
ls -l $W/*.cache $W/*.granary > $OUT/h/ls.txt
for f in c16 c1 b1 b16; do python3 -c "
import json,sys; d=json.load(open('$OUT/h/$f.json')); dev=d.get('device') if isinstance(d.get('device'),dict) else {}
print('$f', 'wall', round(d['wall_seconds'],3), 'hits', dev.get('cache_hits', d.get('cache_hits')), 'succeeded', d.get('succeeded', d.get('pipelines')))"; done | tee $OUT/h/summary.txt
