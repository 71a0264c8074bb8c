// Many learning curves drawn as a density image: each curve's segments are
// rasterized (one pixel wide, Bresenham) into per-pixel counts, which become a
// colour whose opacity grows with the log of the count. For 10,000 curves
// this is faster than stroking them on a canvas, and it shows where curves
// crowd instead of a saturated band.

const NORMAL = [47, 111, 179]; // ACCENT
const FADED = [154, 163, 175];

/** Liang–Barsky: the part of the segment inside [0,w]x[0,h], or null. */
function clip(x0, y0, x1, y1, w, h) {
  let t0 = 0;
  let t1 = 1;
  const dx = x1 - x0;
  const dy = y1 - y0;
  const p = [-dx, dx, -dy, dy];
  const q = [x0, w - x0, y0, h - y0];
  for (let i = 0; i < 4; i++) {
    if (p[i] === 0) {
      if (q[i] < 0) return null;
    } else {
      const r = q[i] / p[i];
      if (p[i] < 0) {
        if (r > t1) return null;
        if (r > t0) t0 = r;
      } else {
        if (r < t0) return null;
        if (r < t1) t1 = r;
      }
    }
  }
  return [x0 + t0 * dx, y0 + t0 * dy, x0 + t1 * dx, y0 + t1 * dy];
}

/** Adds one to each pixel of the segment (Bresenham on rounded ends, so
 * every column or row gets exactly one pixel), but not to its first pixel:
 * that is the previous segment's last one. */
function plot(buf, w, h, x0, y0, x1, y1) {
  let x;
  let y;
  let xe;
  let ye;
  if (x0 >= 0 && x0 <= w - 1 && x1 >= 0 && x1 <= w - 1 && y0 >= 0 && y0 <= h - 1 && y1 >= 0 && y1 <= h - 1) {
    x = Math.round(x0); // inside: the usual case, no clipping
    y = Math.round(y0);
    xe = Math.round(x1);
    ye = Math.round(y1);
  } else {
    const c = clip(x0, y0, x1, y1, w - 1, h - 1);
    if (!c) return;
    x = Math.round(c[0]);
    y = Math.round(c[1]);
    xe = Math.round(c[2]);
    ye = Math.round(c[3]);
  }
  const dx = Math.abs(xe - x);
  const dy = -Math.abs(ye - y);
  const stepX = x < xe ? 1 : -1;
  const stepY = y < ye ? 1 : -1;
  let err = dx + dy;
  while (x !== xe || y !== ye) {
    const e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      x += stepX;
    }
    if (e2 <= dx) {
      err += dx;
      y += stepY;
    }
    buf[y * w + x]++;
  }
}

/**
 * An offscreen canvas of w x h device pixels with the curves of `lines`
 * ({steps, values, style: 'normal'|'faded'|...}); X(step) and Y(value) give
 * positions relative to the image's top left. Lines of other styles are
 * left out (drawn on top by the caller).
 */
export function densityImage(lines, w, h, X, Y, canvas) {
  const normal = new Uint16Array(w * h);
  const faded = new Uint16Array(w * h);
  for (const line of lines) {
    const buf = line.style === 'normal' ? normal : line.style === 'faded' ? faded : null;
    if (!buf) continue;
    const { steps, values } = line;
    let px = null;
    let py = 0;
    for (let i = 0; i < steps.length; i++) {
      const v = values[i];
      if (v === null) {
        px = null;
        continue;
      }
      const x = X(steps[i]);
      const y = Y(v);
      if (px === null) {
        const ix = Math.round(x);
        const iy = Math.round(y);
        if (ix >= 0 && ix < w && iy >= 0 && iy < h) buf[iy * w + ix]++;
      } else {
        plot(buf, w, h, px, py, x, y);
      }
      px = x;
      py = y;
    }
  }
  let maxN = 1;
  let maxF = 1;
  for (let i = 0; i < normal.length; i++) {
    if (normal[i] > maxN) maxN = normal[i];
    if (faded[i] > maxF) maxF = faded[i];
  }
  const img = new ImageData(w, h);
  const px = img.data;
  const ln = Math.log1p(maxN);
  const lf = Math.log1p(maxF);
  for (let i = 0; i < normal.length; i++) {
    const n = normal[i];
    const f = faded[i];
    if (n === 0 && f === 0) continue;
    const [c, a] = n > 0 ? [NORMAL, 0.25 + 0.75 * (Math.log1p(n) / ln)] : [FADED, 0.2 + 0.5 * (Math.log1p(f) / lf)];
    const o = i * 4;
    px[o] = c[0];
    px[o + 1] = c[1];
    px[o + 2] = c[2];
    px[o + 3] = Math.round(a * 255);
  }
  const out = canvas || document.createElement('canvas');
  out.width = w;
  out.height = h;
  out.getContext('2d').putImageData(img, 0, 0);
  return out;
}
