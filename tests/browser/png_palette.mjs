// Screenshots for docs/img as small PNGs: Chromium writes 24-bit colour, and a
// page of charts and anti-aliased text then costs 150-200 KB. An indexed PNG
// of the 256 most used colours (every other colour drawn as the nearest of
// them, which only touches anti-aliased edges) is a third of that and looks
// the same. Reads 8-bit RGB or RGBA, non-interlaced (what Chromium writes).
import zlib from 'node:zlib';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

// Pixels as 0xRRGGBB numbers, row by row, undoing the PNG row filters.
function decode(png) {
  if (!png.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG');
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat = [];
  for (let at = 8; at < png.length;) {
    const length = png.readUInt32BE(at);
    const type = png.toString('ascii', at + 4, at + 8);
    const data = png.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      if (data[8] !== 8 || (data[9] !== 2 && data[9] !== 6) || data[12] !== 0)
        throw new Error('only 8-bit RGB or RGBA, not interlaced');
      channels = data[9] === 6 ? 4 : 3;
    }
    if (type === 'IDAT') idat.push(data);
    at += 12 + length;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const rows = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const out = y * stride;
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? rows[out + i - channels] : 0;
      const b = y > 0 ? rows[out - stride + i] : 0;
      const c = i >= channels && y > 0 ? rows[out - stride + i - channels] : 0;
      let predicted = 0;
      if (filter === 1) predicted = a;
      else if (filter === 2) predicted = b;
      else if (filter === 3) predicted = (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        predicted = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      rows[out + i] = (line[i] + predicted) & 0xff;
    }
  }
  const pixels = new Uint32Array(width * height);
  for (let p = 0; p < pixels.length; p++)
    pixels[p] = (rows[p * channels] << 16) | (rows[p * channels + 1] << 8) | rows[p * channels + 2];
  return { width, height, pixels };
}

// The PNG with at most 256 colours: the most used ones, the rest drawn as their nearest.
export function toPalettePng(png) {
  const { width, height, pixels } = decode(png);
  const counts = new Map();
  for (const v of pixels) counts.set(v, (counts.get(v) || 0) + 1);
  const palette = [...counts.entries()].sort((x, y) => y[1] - x[1] || x[0] - y[0]).slice(0, 256).map((e) => e[0]);
  const index = new Map(palette.map((v, i) => [v, i]));
  const nearest = (v) => {
    let best = 0;
    let bestDistance = Infinity;
    palette.forEach((q, i) => {
      const dr = ((v >> 16) & 0xff) - ((q >> 16) & 0xff);
      const dg = ((v >> 8) & 0xff) - ((q >> 8) & 0xff);
      const db = (v & 0xff) - (q & 0xff);
      const d = dr * dr + dg * dg + db * db;
      if (d < bestDistance) {
        bestDistance = d;
        best = i;
      }
    });
    return best;
  };
  const raw = Buffer.alloc(height * (width + 1));
  for (let y = 0; y < height; y++) {
    raw[y * (width + 1)] = 0;  // no filter: indices of flat areas repeat, which deflate takes well
    for (let x = 0; x < width; x++) {
      const v = pixels[y * width + x];
      let i = index.get(v);
      if (i === undefined) {
        i = nearest(v);
        index.set(v, i);
      }
      raw[y * (width + 1) + 1 + x] = i;
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;  // bit depth
  ihdr[9] = 3;  // indexed colour
  const plte = Buffer.alloc(palette.length * 3);
  palette.forEach((v, i) => {
    plte[3 * i] = (v >> 16) & 0xff;
    plte[3 * i + 1] = (v >> 8) & 0xff;
    plte[3 * i + 2] = v & 0xff;
  });
  return Buffer.concat([SIGNATURE, chunk('IHDR', ihdr), chunk('PLTE', plte),
    chunk('IDAT', zlib.deflateSync(raw, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}
