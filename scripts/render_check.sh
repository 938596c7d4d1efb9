#!/usr/bin/env bash
# Renders an HTML (or SVG) report in headless Chromium and checks that the
# screenshot shows a picture: a PNG of the window's size with many colours
# and a fair share of non-white pixels — a blank, broken or unstyled page
# fails. Used by the `report` CLI tests; handy by hand too.
#
#   scripts/render_check.sh REPORT.html OUT.png
#
# Exit 0: rendered and not blank; 1: blank or broken; 77: no Chromium
# installed (ctest reports the test as skipped; scripts/setup.sh installs it).
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 REPORT.html OUT.png" >&2
  exit 2
fi
report=$(realpath "$1")
png=$2
width=1400
height=1000

browser=""
for candidate in chromium chromium-browser google-chrome; do
  if command -v "$candidate" >/dev/null 2>&1; then
    browser=$candidate
    break
  fi
done
if [[ -z "$browser" ]]; then
  echo "render_check: no chromium found; skipping" >&2
  exit 77
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
rm -f "$png"
# Offline and quiet: no sandbox (containers run as root), no GPU, no network
# services, a throw-away profile.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --screenshot="$png" --window-size="$width,$height" \
  "file://$report" >"$profile/chromium.log" 2>&1 || {
  echo "render_check: $browser failed:" >&2
  cat "$profile/chromium.log" >&2
  exit 1
}
if [[ ! -s "$png" ]]; then
  echo "render_check: no screenshot written" >&2
  cat "$profile/chromium.log" >&2
  exit 1
fi

# Decode the PNG with the standard library only (zlib + the five PNG row
# filters) and count colours.
python3 - "$png" "$width" "$height" <<'PY'
import struct, sys, zlib

path, want_w, want_h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = open(path, "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit(f"render_check: {path} is not a PNG")
pos, idat, header = 8, [], None
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        header = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat.append(body)
    pos += 12 + length
w, h, depth, colour, _, _, interlace = header
if (w, h) != (want_w, want_h):
    sys.exit(f"render_check: screenshot is {w}x{h}, expected {want_w}x{want_h}")
channels = {2: 3, 6: 4}.get(colour)
if depth != 8 or channels is None or interlace:
    sys.exit(f"render_check: unexpected PNG layout (depth {depth}, colour type {colour}, interlace {interlace})")
raw = zlib.decompress(b"".join(idat))
stride = w * channels
previous = bytearray(stride)
colours, non_white = set(), 0
for y in range(h):
    start = y * (stride + 1)
    kind, row = raw[start], bytearray(raw[start + 1:start + 1 + stride])
    if kind == 1:
        for i in range(channels, stride):
            row[i] = (row[i] + row[i - channels]) & 255
    elif kind == 2:
        row = bytearray((a + b) & 255 for a, b in zip(row, previous))
    elif kind == 3:
        for i in range(stride):
            left = row[i - channels] if i >= channels else 0
            row[i] = (row[i] + ((left + previous[i]) >> 1)) & 255
    elif kind == 4:
        for i in range(stride):
            a = row[i - channels] if i >= channels else 0
            b, c = previous[i], previous[i - channels] if i >= channels else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, channels):
        pixel = bytes(row[x:x + 3])
        colours.add(pixel)
        if pixel != b"\xff\xff\xff":
            non_white += 1
    previous = row
share = non_white / (w * h)
print(f"render_check: {w}x{h}, {len(colours)} colours, {100 * share:.1f}% non-white, {len(data)} bytes")
if len(colours) < 16 or share < 0.03:
    sys.exit("render_check: the screenshot looks blank")
PY
