#!/usr/bin/env bash
# Make .devsnap/ = a clean `git archive` of HEAD (plus the carried inputs a device script needs),
# so a device call measures one commit and not the shared working tree with others' edits in it.
#   bash benchmarks/device_snapshot.sh [EXTRA_PATH ...]      # e.g. .whl .tune_work
# then run on the device with carry [".devsnap"]:  cd .devsnap && bash benchmarks/h200_rest.sh
# .devsnap/COMMIT names the commit; add `.devsnap/` to .git/info/exclude once.
set -eu
rm -rf .devsnap && mkdir .devsnap
git archive HEAD | tar -x -C .devsnap
git rev-parse HEAD > .devsnap/COMMIT
for p in "$@"; do cp -r "$p" .devsnap/; done
du -sh .devsnap
