"""numpy reference for the deformable_attention examples.

Multi-scale deformable attention sampling (Deformable DETR), batch 1:
  value         [Nv][Hh][Dh]   Nv = sum_l Hl*Wl, level l stored row-major (y, x) from level_start[l]
  spatial_shapes[L][2]         (Hl, Wl) as int32
  level_start   [L]            int32
  loc           [Nq][Hh][L][P][2]  normalized (x, y) sampling locations
  attn          [Nq][Hh][L][P]     attention weights
  out           [Nq][Hh*Dh]
out[q][h*Dh + d] = sum_{l,p} attn[q,h,l,p] * bilinear(value level l, head h, channel d,
                                                      x*Wl - 0.5, y*Hl - 0.5)
Bilinear sampling reads zero outside the level's grid (align_corners=False convention).
"""
import numpy as np


def deformable_attention(value, spatial_shapes, level_start, loc, attn, Nv, Nq, Hh, Dh, L, P):
    val = np.asarray(value, dtype=np.float64).reshape(Nv, Hh, Dh)
    shapes = np.asarray(spatial_shapes).reshape(L, 2).astype(np.int64)
    starts = np.asarray(level_start).reshape(L).astype(np.int64)
    lc = np.asarray(loc, dtype=np.float64).reshape(Nq, Hh, L, P, 2)
    aw = np.asarray(attn, dtype=np.float64).reshape(Nq, Hh, L, P)
    out = np.zeros((Nq, Hh, Dh))
    heads = np.arange(Hh)[None, :, None]                     # [1][Hh][1]
    for l in range(L):
        hl, wl = int(shapes[l, 0]), int(shapes[l, 1])
        grid = val[starts[l]:starts[l] + hl * wl].reshape(hl, wl, Hh, Dh)
        px = lc[:, :, l, :, 0] * wl - 0.5                    # [Nq][Hh][P]
        py = lc[:, :, l, :, 1] * hl - 0.5
        x0 = np.floor(px).astype(np.int64)
        y0 = np.floor(py).astype(np.int64)
        fx = px - x0
        fy = py - y0
        for dy in (0, 1):
            for dx in (0, 1):
                xi = x0 + dx
                yi = y0 + dy
                w = (fx if dx else 1.0 - fx) * (fy if dy else 1.0 - fy)
                inside = (xi >= 0) & (xi < wl) & (yi >= 0) & (yi < hl)
                g = grid[np.clip(yi, 0, hl - 1), np.clip(xi, 0, wl - 1), heads]   # [Nq][Hh][P][Dh]
                coef = np.where(inside, w, 0.0) * aw[:, :, l, :]
                out += (coef[..., None] * g).sum(axis=2)
    return out.reshape(Nq, Hh * Dh).astype(np.float32)


def _deformable_loops(value, spatial_shapes, level_start, loc, attn, Nv, Nq, Hh, Dh, L, P):
    """Second formulation: every grid cell weighted by the tent function
    max(0, 1-|px-j|) * max(0, 1-|py-i|); cells outside the grid simply do not exist,
    which is the zero-padding rule."""
    val = np.asarray(value, dtype=np.float64).reshape(Nv, Hh, Dh)
    lc = np.asarray(loc, dtype=np.float64).reshape(Nq, Hh, L, P, 2)
    aw = np.asarray(attn, dtype=np.float64).reshape(Nq, Hh, L, P)
    out = np.zeros((Nq, Hh, Dh))
    for q in range(Nq):
        for h in range(Hh):
            for l in range(L):
                hl, wl = int(spatial_shapes[l][0]), int(spatial_shapes[l][1])
                for p in range(P):
                    px = lc[q, h, l, p, 0] * wl - 0.5
                    py = lc[q, h, l, p, 1] * hl - 0.5
                    for i in range(hl):
                        wy = max(0.0, 1.0 - abs(py - i))
                        if wy == 0.0:
                            continue
                        for j in range(wl):
                            wx = max(0.0, 1.0 - abs(px - j))
                            if wx == 0.0:
                                continue
                            idx = int(level_start[l]) + i * wl + j
                            out[q, h] += aw[q, h, l, p] * wx * wy * val[idx, h]
    return out.reshape(Nq, Hh * Dh).astype(np.float32)


def deformable_attention_selfcheck():
    rng = np.random.default_rng(9)
    shapes = np.array([[8, 8], [4, 4]], dtype=np.int32)
    starts = np.array([0, 64], dtype=np.int32)
    Nv, L = 80, 2
    for Nq, Hh, Dh, P in [(3, 2, 4, 2), (5, 3, 7, 3)]:
        value = rng.uniform(-1, 1, size=(Nv, Hh, Dh)).astype(np.float32)
        loc = rng.uniform(0, 1, size=(Nq, Hh, L, P, 2)).astype(np.float32)
        loc[0, 0, 0, 0] = [0.0, 0.0]            # corner: three of four taps outside
        loc[-1, -1, -1, -1] = [1.0, 0.99]       # right edge
        attn = rng.uniform(0, 1, size=(Nq, Hh, L, P)).astype(np.float32)
        a = deformable_attention(value, shapes, starts, loc, attn, Nv, Nq, Hh, Dh, L, P)
        b = _deformable_loops(value, shapes, starts, loc, attn, Nv, Nq, Hh, Dh, L, P)
        assert np.allclose(a, b, rtol=1e-5, atol=1e-6), (Nq, Hh, Dh, P)
    return True


if __name__ == "__main__":
    deformable_attention_selfcheck()
    print("deformable_attention ref ok")
