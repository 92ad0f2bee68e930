#!/usr/bin/env bash
# Refreshes the chart library vendored into internal/report/assets/ from the npm registry,
# at the exact version pinned in package-lock.json. The Go build embeds the copied files and
# never needs npm; run this only to change the uPlot version (edit package.json, `npm install`,
# then this script), and commit the assets together with package*.json.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="$here/../internal/report/assets"
cd "$here"
npm ci --no-audit --no-fund
src="node_modules/uplot"
version="$(node -p 'require("./node_modules/uplot/package.json").version')"
cp "$src/dist/uPlot.iife.min.js" "$dest/uPlot.iife.min.js"
cp "$src/dist/uPlot.min.css" "$dest/uPlot.min.css"
cp "$src/LICENSE" "$dest/uPlot.LICENSE"
printf '%s\n' "$version" > "$dest/uPlot.VERSION"
echo "vendored uPlot $version into $dest"
