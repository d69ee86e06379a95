#!/usr/bin/env bash
# Quick start, command 1: install what building moeplan needs (if missing),
# build the tool and its Python module (not the tests), and run the main job
# on the bundled default scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
MOEPLAN_TESTS=OFF scripts/build.sh
# The Python module (docs/python.md): a moeplan.pth in python3's user
# site-packages (a virtual environment's own when user sites are off) names
# the build's python/ folder, so `import moeplan` finds this build's module.
build_dir=$(cd "${MOEPLAN_BUILD_DIR:-build}" && pwd)
if compgen -G "$build_dir/python/moeplan*.so" >/dev/null; then
  site_dir=$(python3 -c 'import site, sysconfig; print(site.getusersitepackages() if site.ENABLE_USER_SITE else sysconfig.get_paths()["purelib"])')
  mkdir -p "$site_dir"
  echo "$build_dir/python" >"$site_dir/moeplan.pth"
  echo "moeplan: python3 imports moeplan from $build_dir/python ($site_dir/moeplan.pth)" >&2
fi
"$build_dir/moeplan" plan foldmoe-gpt-moe-m-16k
