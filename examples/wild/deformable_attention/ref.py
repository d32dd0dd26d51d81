"""numpy reference for the wild deformable attention kernels (Deformable DETR sampling, batch 1).

value [Nv][Hh][Dh] with level l stored row-major from level_start[l]; spatial_shapes [L][2] = (H, W);
loc [Nq][Hh][L][P][2] normalised (x, y); attn [Nq][Hh][L][P]; out [Nq][Hh * Dh].
Sample position x * W - 0.5, y * H - 0.5; corners outside the level read zero.
"""
import numpy as np


def msda(value, spatial_shapes, level_start, loc, attn, Nv, Nq, Hh, Dh, L, P):
    val = np.asarray(value, np.float64).reshape(Nv, Hh, Dh)
    shp = np.asarray(spatial_shapes).reshape(L, 2).astype(np.int64)
    st = np.asarray(level_start).reshape(L).astype(np.int64)
    lc = np.asarray(loc, np.float64).reshape(Nq, Hh, L, P, 2)
    aw = np.asarray(attn, np.float64).reshape(Nq, Hh, L, P)
    out = np.zeros((Nq, Hh, Dh))
    for l in range(L):
        H, W = int(shp[l, 0]), int(shp[l, 1])
        px = lc[:, :, l, :, 0] * W - 0.5
        py = lc[:, :, l, :, 1] * H - 0.5
        x0 = np.floor(px).astype(np.int64)
        y0 = np.floor(py).astype(np.int64)
        fx, fy = px - x0, py - y0
        hh = np.broadcast_to(np.arange(Hh)[None, :, None], x0.shape)
        for dy in (0, 1):
            for dx in (0, 1):
                xi, yi = x0 + dx, y0 + dy
                inside = (xi >= 0) & (xi < W) & (yi >= 0) & (yi < H)
                cell = st[l] + np.clip(yi, 0, H - 1) * W + np.clip(xi, 0, W - 1)
                w = (fx if dx else 1 - fx) * (fy if dy else 1 - fy) * inside * aw[:, :, l, :]
                out += (w[..., None] * val[cell, hh]).sum(axis=2)
    return out.reshape(Nq, Hh * Dh).astype(np.float32)
